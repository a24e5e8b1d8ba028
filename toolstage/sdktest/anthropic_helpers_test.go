package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"github.com/toolguard/toolguard/httpguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"github.com/toolguard/toolguard/toolstage"
)

// The shared fixtures of the anthropic-sdk-go and genai tests: the tools
// (a bank's), the signed-in user the program injects, the events both
// stages report, and a real redis-server for the approval tests.

// signedInUserKey is the context key of the request's signed-in user.
type signedInUserKey struct{}

// withSignedInUser returns ctx for a request of user: what the program's
// own authentication would put there.
func withSignedInUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, signedInUserKey{}, user)
}

// injectSignedInUser is the stage's toolstage.Inject of user_id: the
// signed-in user of the run's context, never the model's.
func injectSignedInUser() toolstage.Option {
	return toolstage.Inject("user_id", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) {
		user, _ := ctx.Value(signedInUserKey{}).(string)
		if user == "" {
			return nil, errors.New("no signed-in user")
		}
		return user, nil
	})
}

// WeatherArgs are get_weather's arguments.
type WeatherArgs struct {
	City string `json:"city"`
	Days int    `json:"days,omitempty"`
}

// BalanceArgs are get_balance's arguments: only the injected user.
type BalanceArgs struct {
	UserID string `json:"user_id" toolguard:"inject"`
}

// TransferArgs are transfer_money's arguments.
type TransferArgs struct {
	To        string `json:"to"`
	AmountEUR int    `json:"amount_eur"`
	UserID    string `json:"user_id" toolguard:"inject"`
}

// errPaymentsTimeout is what a call to the bank's API returns when it
// times out: transient (retry.IsRetryable), and the request may have been
// acted on.
var errPaymentsTimeout = fmt.Errorf("payments API: %w", os.ErrDeadlineExceeded)

// bank is the world the tools act on, shared by every "process" of a test:
// what each tool ran with, and scripted faults.
type bank struct {
	mu   sync.Mutex
	runs []string // "tool args", in the order the tools ran

	// balanceTimeouts is how many get_balance runs time out before one
	// succeeds; transferTimesOut makes every transfer_money run time out
	// (after the bank took the order: its outcome is unknown).
	balanceTimeouts  atomic.Int32
	transferTimesOut atomic.Bool
}

func (b *bank) ran(tool string, args any) {
	raw, _ := json.Marshal(args)
	b.mu.Lock()
	b.runs = append(b.runs, tool+" "+string(raw))
	b.mu.Unlock()
}

// runsOf returns the arguments each run of tool had, in order.
func (b *bank) runsOf(tool string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, r := range b.runs {
		if args, ok := strings.CutPrefix(r, tool+" "); ok {
			out = append(out, args)
		}
	}
	return out
}

// tools returns the bank's tools, made afresh (as each process of a
// program makes its own): get_weather, get_balance (idempotent: a read)
// and transfer_money (not idempotent), the last two run as the signed-in
// user.
func (b *bank) tools() []toolstage.Tool {
	weather := toolstage.NewTool("get_weather", "The weather in a city for some days.",
		func(_ context.Context, a WeatherArgs) (string, error) {
			b.ran("get_weather", a)
			return fmt.Sprintf("sunny in %s for %d days", a.City, a.Days), nil
		})
	balance := toolstage.NewTool("get_balance", "The signed-in user's balance.",
		func(_ context.Context, a BalanceArgs) (string, error) {
			b.ran("get_balance", a)
			if b.balanceTimeouts.Add(-1) >= 0 {
				return "", errPaymentsTimeout
			}
			return "1200 EUR", nil
		})
	transfer := toolstage.NewTool("transfer_money", "Send money from the signed-in user's account.",
		func(_ context.Context, a TransferArgs) (string, error) {
			b.ran("transfer_money", a)
			if b.transferTimesOut.Load() {
				return "", errPaymentsTimeout
			}
			return fmt.Sprintf("sent %d EUR to %s", a.AmountEUR, a.To), nil
		})
	return []toolstage.Tool{weather, toolstage.Idempotent(balance), transfer}
}

// noWait is ToolRetry's backoff in tests: retry at once.
func noWait() toolstage.ToolRetryOption {
	return toolstage.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })
}

// stageEvents records the events of both stages, as the stage's
// WithEventHandler receives them; safe for concurrent use.
type stageEvents struct {
	mu     sync.Mutex
	events []guard.Event
}

func (r *stageEvents) handler() toolstage.Option {
	return toolstage.WithEventHandler(func(_ context.Context, e guard.Event) {
		r.mu.Lock()
		r.events = append(r.events, e)
		r.mu.Unlock()
	})
}

// of returns the events of kind k.
func (r *stageEvents) of(k guard.EventKind) []guard.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []guard.Event
	for _, e := range r.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// String lists the events as kind(middleware tool call paths), in order.
func (r *stageEvents) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for _, e := range r.events {
		parts = append(parts, fmt.Sprintf("%s(%s %s %s %v)", e.Kind, e.Middleware, e.Tool, e.CallID, e.Paths))
	}
	return strings.Join(parts, ", ")
}

// guardedHTTPClient is the *http.Client every program here gives its
// SDK: httpguard's argument validation over the default transport, with
// no handler of its own, so its events reach the stage's (Scope).
func guardedHTTPClient() *httpguard.Transport {
	return httpguard.New(nil, httpguard.ToolArgValidation())
}

// logProviderRequests logs every request the loopback provider received,
// its body as sent.
func logProviderRequests(t *testing.T, srv *fp.Server) {
	t.Helper()
	for i, r := range srv.Requests() {
		t.Logf("provider request %d: %s %s\n%s", i+1, r.Method, r.Path, r.Body)
	}
}

// requireRedisEnv turns a missing redis-server from a skip into a failure.
const requireRedisEnv = "TOOLGUARD_REQUIRE_REDIS"

// startRedisServer starts a redis-server of the test's own, stopped when
// the test ends; without one on the PATH it skips, or fails under
// TOOLGUARD_REQUIRE_REDIS=1.
func startRedisServer(t *testing.T) *redisserver.Server {
	t.Helper()
	s, err := redisserver.Start(t.TempDir())
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv(requireRedisEnv) == "1" {
			t.Fatalf("%v, and %s=1 requires the Redis tests to run", err, requireRedisEnv)
		}
		t.Skipf("skipping the test against a real Redis: %v (set %s=1 to make this a failure)", err, requireRedisEnv)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// redisCheckpointer is one process's Checkpointer on the Redis at addr:
// a client of its own, closed when the test ends.
func redisCheckpointer(t *testing.T, addr string) *redisstore.Checkpointer {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return redisstore.NewCheckpointer(c)
}

// interruptSecret is the key every process signs and verifies
// interrupts with (toolstage.WithInterruptKey): the application's secret.
const interruptSecret = "the application's secret, 32 by"

// tampered returns the interrupt in JSON decoded and changed by change,
// as a client that held it could: the signature is the original's.
func tampered(t *testing.T, wire []byte, change func(in *toolstage.Interrupt)) *toolstage.Interrupt {
	t.Helper()
	var in toolstage.Interrupt
	if err := json.Unmarshal(wire, &in); err != nil {
		t.Fatal(err)
	}
	change(&in)
	return &in
}

// raiseAmount sets the pending transfer's amount_eur to amount.
func raiseAmount(amount int) func(in *toolstage.Interrupt) {
	return func(in *toolstage.Interrupt) {
		var args map[string]any
		_ = json.Unmarshal(in.Pending[0].Args, &args)
		args["amount_eur"] = amount
		in.Pending[0].Args, _ = json.Marshal(args)
	}
}

// rewriteHost replaces the program's state attached to the interrupt
// (Stage.Attach) with host.
func rewriteHost(host string) func(in *toolstage.Interrupt) {
	return func(in *toolstage.Interrupt) { in.Host = json.RawMessage(host) }
}

// sameJSON reports whether a and b are the same JSON value (key order and
// spacing aside).
func sameJSON(a []byte, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// accept is the person's decision to run every pending call of in.
func accept(in *toolstage.Interrupt) []toolstage.Decision {
	var ds []toolstage.Decision
	for _, p := range in.Pending {
		ds = append(ds, toolstage.Decision{CallID: p.ID, Digest: p.Digest, Action: toolstage.Accept})
	}
	return ds
}
