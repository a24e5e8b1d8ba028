package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// TestThreadLimitWithoutThreadIsReported: a thread limit used on calls whose
// context names no thread counts the thread from the transcript, which
// trimming breaks (a limit of 3 let a 4th call run). Each limiter reports
// it once per value; a context with a thread id reports nothing.
func TestThreadLimitWithoutThreadIsReported(t *testing.T) {
	t.Parallel()
	limiters := map[string]func(opt guard.Option) guard.Middleware[*tReq, *tResp]{
		"ToolCallLimit": func(opt guard.Option) guard.Middleware[*tReq, *tResp] {
			return toolCallLimit(guard.WithThreadLimit(3), opt)
		},
		"ModelCallLimit": func(opt guard.Option) guard.Middleware[*tReq, *tResp] {
			return modelCallLimit(guard.WithThreadLimit(3), opt)
		},
	}
	for name, limiter := range limiters {
		for _, thread := range []string{"", "t1"} {
			t.Run(name+"/thread="+thread, func(t *testing.T) {
				t.Parallel()
				var rec recorder
				llm := wrap(newScript(limCalls("search"), limCalls("search")), limiter(guard.WithEventHandler(rec.handle)))
				ctx := context.Background()
				if thread != "" {
					ctx = guard.WithThread(ctx, thread)
				}
				for range 2 {
					if _, err := llm(ctx, question(searchTool)); err != nil {
						t.Fatal(err)
					}
				}
				var got []guard.Event
				for _, e := range rec.all() {
					if e.Kind == guard.EventMisconfigured {
						got = append(got, e)
					}
				}
				if thread != "" {
					if len(got) != 0 {
						t.Errorf("events %+v, want none with a thread id", got)
					}
					return
				}
				if len(got) != 1 || !errors.Is(got[0].Err, guard.ErrNoThread) || got[0].Middleware != name ||
					!strings.Contains(got[0].Err.Error(), "guard.WithThread(ctx, id)") {
					t.Errorf("events %+v, want one EventMisconfigured from %s wrapping ErrNoThread", got, name)
				}
			})
		}
	}
}

// TestDuplicateToolNamesReported: a raw request offering two tools of one
// name validates against the last one's schema; ToolArgValidation reports
// it once per value, naming the tool.
func TestDuplicateToolNamesReported(t *testing.T) {
	t.Parallel()
	var rec recorder
	stringQuery := tool("search", map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}})
	intQuery := tool("search", map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "integer"}}})
	bad := callsStep(call("search", `{"query": 1}`))
	llm := wrap(newScript(bad, bad), toolArgValidation(guard.WithEventHandler(rec.handle)))
	for range 2 {
		if _, err := llm(context.Background(), question(stringQuery, weatherTool, intQuery)); err != nil {
			t.Fatal(err)
		}
	}
	var got []guard.Event
	for _, e := range rec.all() {
		if e.Kind == guard.EventMisconfigured {
			got = append(got, e)
		}
	}
	if len(got) != 1 || !errors.Is(got[0].Err, guard.ErrDuplicateTool) || got[0].Tool != "search" ||
		!strings.Contains(got[0].Err.Error(), `more than one tool named "search"`) {
		t.Errorf("events %+v, want one EventMisconfigured wrapping ErrDuplicateTool for search", got)
	}
	// One tool per name: nothing to report.
	var clean recorder
	llm = wrap(newScript(bad), toolArgValidation(guard.WithEventHandler(clean.handle)))
	if _, err := llm(context.Background(), question(intQuery, weatherTool)); err != nil {
		t.Fatal(err)
	}
	if _, ok := clean.find(guard.EventMisconfigured); ok {
		t.Errorf("events %v, want no EventMisconfigured", clean.kinds())
	}
}
