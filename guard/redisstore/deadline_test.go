//go:build unix

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// deadlineSlack is what a call may take past its deadline on a loaded
// machine (a shared 2-core runner under -race): the store itself returns
// as soon as the context is done.
const deadlineSlack = time.Second

// limiterReleaseTimeout is guard.ReleaseTimeout: how long a limiter
// waits for the release of a call that did not go out.
const limiterReleaseTimeout = 250 * time.Millisecond

// TestFrozenDeadlines: with the server frozen (SIGSTOP, never thawed while
// the call waits), every call into the stores returns within its
// deadline, whatever the client's own timeouts: here go-redis's defaults,
// a 3 s ReadTimeout and 3 retries, with ContextTimeoutEnabled off. Each
// line of the log says what was called, the deadline, and when it
// returned with what.
func TestFrozenDeadlines(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()}) // go-redis's defaults
	t.Cleanup(func() { _ = client.Close() })
	store := redisstore.New(client)
	cp := redisstore.NewCheckpointer(client)

	pending := map[string]*toolstage.Interrupt{} // the Resume cases' interrupts, by thread
	cases := []struct {
		name string
		// prepare runs with the server up; run freezes it (with freeze)
		// before, or while, it calls the store with ctx, whose deadline
		// is d; margin is what it may take past d.
		prepare func(t *testing.T, id string)
		run     func(ctx context.Context, id string, freeze func()) error
		margin  time.Duration
	}{
		{
			name:    "reserve",
			prepare: func(*testing.T, string) {},
			run: func(ctx context.Context, id string, freeze func()) error {
				freeze()
				_, _, err := store.Reserve(ctx, guard.ThreadKey{Thread: id}, 1, 10)
				return err
			},
			margin: deadlineSlack,
		},
		{
			name: "release",
			prepare: func(t *testing.T, id string) {
				if _, ok, err := store.Reserve(context.Background(), guard.ThreadKey{Thread: id}, 1, 10); !ok || err != nil {
					t.Fatalf("Reserve = %v, %v", ok, err)
				}
			},
			run: func(ctx context.Context, id string, freeze func()) error {
				freeze()
				return store.Release(ctx, guard.ThreadKey{Thread: id}, 1)
			},
			margin: deadlineSlack,
		},
		{
			name: "load",
			prepare: func(t *testing.T, id string) {
				if ok, err := cp.Save(context.Background(), id, 0, []byte("state")); !ok || err != nil {
					t.Fatalf("Save = %v, %v", ok, err)
				}
			},
			run: func(ctx context.Context, id string, freeze func()) error {
				freeze()
				_, _, err := cp.Load(ctx, id)
				return err
			},
			margin: deadlineSlack,
		},
		{
			name: "save",
			prepare: func(t *testing.T, id string) {
				if ok, err := cp.Save(context.Background(), id, 0, []byte("state")); !ok || err != nil {
					t.Fatalf("Save = %v, %v", ok, err)
				}
			},
			run: func(ctx context.Context, id string, freeze func()) error {
				freeze()
				_, err := cp.Save(ctx, id, 1, []byte("next"))
				return err
			},
			margin: deadlineSlack,
		},
		{
			// ModelCallLimit reserves, the model call fails at its
			// deadline (the server froze meanwhile), and the limiter
			// releases the call: the release has limiterReleaseTimeout.
			name:    "ModelCallLimit release",
			prepare: func(*testing.T, string) {},
			run: func(ctx context.Context, id string, freeze func()) error {
				model := fakemodel.New(fakemodel.Func(func(ctx context.Context, _ []llms.MessageContent, _ llms.CallOptions) (*llms.ContentResponse, error) {
					freeze()
					<-ctx.Done()
					return nil, ctx.Err()
				}))
				llm := middleware.Wrap(model, middleware.ModelCallLimit(guard.WithThreadLimit(10), guard.WithThreadStore(store)))
				_, err := llm.GenerateContent(guard.WithThread(ctx, id), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
				return err
			},
			margin: limiterReleaseTimeout + deadlineSlack,
		},
		{
			// An approved transfer resumed on a replica while the server
			// is frozen: Resume loads the thread's checkpoint.
			name: "Resume",
			prepare: func(t *testing.T, id string) {
				pending[id] = pauseForApproval(t, cp, id)
			},
			run: func(ctx context.Context, id string, freeze func()) error {
				in := pending[id]
				freeze()
				_, err := approvalAgent(cp, fakemodel.New(fakemodel.Text("done"))).Resume(guard.WithThread(ctx, id), in,
					toolstage.Decision{CallID: in.Pending[0].ID, Action: toolstage.Accept, Digest: in.Pending[0].Digest})
				return err
			},
			margin: deadlineSlack,
		},
	}
	for _, d := range []time.Duration{300 * time.Millisecond, 500 * time.Millisecond} {
		for _, tc := range cases { // one at a time: they freeze one server
			t.Run(fmt.Sprintf("%s/%v", tc.name, d), func(t *testing.T) {
				id := fmt.Sprintf("deadline-%s-%v", tc.name, d)
				tc.prepare(t, id)
				frozen := false
				freeze := func() {
					if err := srv.Freeze(); err != nil {
						t.Error(err)
					}
					frozen = true
				}
				type result struct {
					err  error
					took time.Duration
				}
				done := make(chan result, 1)
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				go func() {
					err := tc.run(ctx, id, freeze)
					done <- result{err, time.Since(start)}
				}()
				var r result
				select {
				case r = <-done:
				case <-time.After(time.Minute): // a guard against hanging, not a measurement
					_ = srv.Thaw()
					r = <-done
				}
				if frozen {
					if err := srv.Thaw(); err != nil {
						t.Fatal(err)
					}
				}
				t.Logf("%s with %v deadline returned after %v: %v", tc.name, d, r.took.Round(time.Millisecond), r.err)
				if !errors.Is(r.err, context.DeadlineExceeded) {
					t.Errorf("error = %v, want one wrapping context.DeadlineExceeded", r.err)
				}
				if r.took > d+tc.margin {
					t.Errorf("returned after %v with a %v deadline, want within %v", r.took.Round(time.Millisecond), d, d+tc.margin)
				}
			})
		}
	}
}

// approvalAgent is an agent whose transfer_money waits for approval, on cp.
func approvalAgent(cp toolstage.Checkpointer, model llms.Model) *agent.Agent {
	transfer := toolstage.NewSchemaTool("transfer_money", "Sends money.", map[string]any{"type": "object"},
		func(context.Context, map[string]any) (string, error) { return "sent", nil })
	return agent.New(model, toolstage.New([]toolstage.Tool{transfer}, toolstage.WithApprovalFor("transfer_money")), agent.WithCheckpointer(cp))
}

// pauseForApproval runs a turn on thread that pauses for approval of a
// transfer, its state saved in cp, and returns the interrupt.
func pauseForApproval(t *testing.T, cp toolstage.Checkpointer, thread string) *toolstage.Interrupt {
	t.Helper()
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{"to":"alice","amount":25}`)))
	_, err := approvalAgent(cp, model).Run(guard.WithThread(context.Background(), thread), "pay alice 25")
	var in *toolstage.Interrupt
	if !errors.As(err, &in) || len(in.Pending) != 1 {
		t.Fatalf("Run = %v, want an *Interrupt with the transfer", err)
	}
	return in
}
