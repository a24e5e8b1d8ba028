package middleware_test

import (
	"context"
	"errors"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// A store that fails lets nothing out, for both limiters, unless they fail
// open; either way an EventStoreError says so.
func TestStoreFailurePolicy(t *testing.T) {
	t.Parallel()
	boom := errors.New("redis down")
	limiters := map[string]func(...guard.LimitOption) middleware.Middleware{
		"ToolCallLimit":  middleware.ToolCallLimit,
		"ModelCallLimit": middleware.ModelCallLimit,
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
				m := fakemodel.New(limCalls("search"))
				resp, err := middleware.Wrap(m, limiter(opts...)).GenerateContent(guard.WithThread(context.Background(), "t"), question, limTools)
				var se *guard.StoreError
				if failOpen {
					if err != nil || len(resp.Choices[0].ToolCalls) != 1 {
						t.Errorf("%s with WithStoreFailOpen = %v, %v; want the tool call through", name, resp, err)
					}
				} else {
					if !errors.Is(err, boom) || !errors.As(err, &se) || se.Middleware != name || se.Key.Thread != "t" {
						t.Errorf("%s error = %v, want a *StoreError of %s for thread t wrapping %v", name, err, name, boom)
					}
					if name == "ModelCallLimit" && len(m.Requests()) != 0 {
						t.Errorf("the model saw %d requests, want none", len(m.Requests()))
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
