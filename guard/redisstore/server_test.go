package redisstore_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// go-redis logs each failed redial of a stopped server; the tests
	// check the errors themselves.
	redis.SetLogger(quiet{})
	goleak.VerifyTestMain(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// requireEnv turns a missing redis-server from a skip into a failure.
const requireEnv = "TOOLGUARD_REQUIRE_REDIS"

// startRedis starts a redis-server of the test's own, stopped when the test
// ends; without one on the PATH it skips, or fails under requireEnv=1.
func startRedis(tb testing.TB, args ...string) *redisserver.Server {
	tb.Helper()
	s, err := redisserver.Start(tb.TempDir(), args...)
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv(requireEnv) == "1" {
			tb.Fatalf("%v, and %s=1 requires the Redis tests to run", err, requireEnv)
		}
		tb.Skipf("skipping the tests against a real Redis: %v (set %s=1 to make this a failure)", err, requireEnv)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Stop() })
	return s
}

// newClient returns a client of addr with short timeouts, closed when the
// test ends.
func newClient(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:         addr,
		DialTimeout:  time.Second,
		ReadTimeout:  time.Second,
		WriteTimeout: time.Second,
		MaxRetries:   1,
		PoolSize:     64,
	})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// searchModel is a model that answers every request with one call of
// search, and counts the requests it saw.
type searchModel struct{ requests chan struct{} }

func newSearchModel(capacity int) *searchModel {
	return &searchModel{requests: make(chan struct{}, capacity)}
}

func (m *searchModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	select {
	case m.requests <- struct{}{}:
	default:
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
		{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "search", Arguments: `{}`}},
	}}}}, nil
}

func (m *searchModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// seen returns the number of requests the model saw.
func (m *searchModel) seen() int { return len(m.requests) }

var question = []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "search")}

// The stall of these tests: a redis-server frozen with SIGSTOP for
// stallFor, longer than the client's ReadTimeout (stallReadTimeout), then
// thawed with SIGCONT. A command sent while it is frozen times out in the
// client, which sends it again (go-redis's default MaxRetries is 3); when
// the server wakes it finds both copies in its sockets and runs both.
const (
	stallReadTimeout = 300 * time.Millisecond
	stallFor         = 450 * time.Millisecond
)

// stallClient returns a client of addr that times out a read after
// stallReadTimeout and otherwise keeps go-redis's defaults: MaxRetries 3,
// its retry backoff, ContextTimeoutEnabled off.
func stallClient(tb testing.TB, addr string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: stallReadTimeout, WriteTimeout: stallReadTimeout})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
