package guard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// A store that fails lets nothing out, for both limiters, unless they fail
// open; either way an EventStoreError says so.
func TestStoreFailurePolicy(t *testing.T) {
	t.Parallel()
	boom := errors.New("redis down")
	limiters := map[string]func(...guard.LimitOption) guard.Middleware[*tReq, *tResp]{
		"ToolCallLimit":  toolCallLimit,
		"ModelCallLimit": modelCallLimit,
	}
	for name, limiter := range limiters {
		for _, failOpen := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/closed", true: "/open"}[failOpen], func(t *testing.T) {
				t.Parallel()
				var rec recorder
				opts := []guard.LimitOption{guard.WithThreadLimit(3), guard.WithThreadStore(&failingStore{boom}),
					guard.WithEventHandler(rec.handle)}
				if failOpen {
					opts = append(opts, guard.WithStoreFailOpen())
				}
				m := newScript(limCalls("search"))
				resp, err := wrap(m, limiter(opts...))(guard.WithThread(context.Background(), "t"), question(limTools...))
				var se *guard.StoreError
				if failOpen {
					if err != nil || len(resp.Calls) != 1 {
						t.Errorf("%s with WithStoreFailOpen = %v, %v; want the tool call through", name, resp, err)
					}
				} else {
					if !errors.Is(err, boom) || !errors.As(err, &se) || se.Middleware != name || se.Key.Thread != "t" {
						t.Errorf("%s error = %v, want a *StoreError of %s for thread t wrapping %v", name, err, name, boom)
					}
					if name == "ModelCallLimit" && len(m.requests()) != 0 {
						t.Errorf("the model saw %d requests, want none", len(m.requests()))
					}
				}
				e, ok := rec.find(guard.EventStoreError)
				if !ok || e.Middleware != name || !errors.Is(e.Err, boom) {
					t.Errorf("EventStoreError = %+v, %v; want one from %s wrapping %v", e, ok, name, boom)
				}
			})
		}
	}
}
