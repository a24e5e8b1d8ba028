package guard_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/validation"
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

// cityArgs is a tool's argument struct, passed by mistake as the schema.
type cityArgs struct {
	City string `json:"city"`
}

// TestStructValueAsParameters: Parameters: cityArgs{} marshals to
// {"city":""}, which JSON Schema reads as "anything goes". It is a schema
// error, reported, and fatal with WithFailClosed.
func TestStructValueAsParameters(t *testing.T) {
	t.Parallel()
	for _, failClosed := range []bool{false, true} {
		t.Run(map[bool]string{false: "fail open", true: "fail closed"}[failClosed], func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			opts := []guard.ValidationOption{guard.WithEventHandler(rec.handle)}
			if failClosed {
				opts = append(opts, guard.WithFailClosed())
			}
			m := newScript(callsStep(call("get_city_weather", `{"city": 1}`)))
			resp, err := run(m, question(tool("get_city_weather", cityArgs{})), toolArgValidation(opts...))
			e, ok := rec.find(guard.EventSchemaError)
			if !ok || !errors.Is(e.Err, validation.ErrNoKeyword) || e.Tool != "get_city_weather" {
				t.Errorf("events = %v, want an EventSchemaError for get_city_weather wrapping validation.ErrNoKeyword", rec.all())
			}
			var se *guard.SchemaError
			switch {
			case failClosed && (!errors.As(err, &se) || !errors.Is(err, validation.ErrNoKeyword)):
				t.Errorf("call = %v, want a *guard.SchemaError wrapping validation.ErrNoKeyword", err)
			case !failClosed && (err != nil || args(resp, 0) != `{"city": 1}`):
				t.Errorf("call = %v, %v, want the call passed on unvalidated (fail open)", resp, err)
			}
		})
	}
}

// TestToolNameNotOffered: a limiter's WithToolName that names none of the
// request's tools ("getWeather" for "get_weather") counts nothing; it is
// reported once per limiter value.
func TestToolNameNotOffered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		limit string
		tools []guard.Tool
		want  int // EventMisconfigured reported over three calls
	}{
		{"name of no offered tool", "getWeather", []guard.Tool{weatherTool, searchTool}, 1},
		{"name of an offered tool", "get_weather", []guard.Tool{weatherTool, searchTool}, 0},
		{"request offers no tools", "getWeather", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			lim := toolCallLimit(guard.WithRunLimit(5), guard.WithToolName(tc.limit),
				guard.WithEventHandler(rec.handle))
			m := newScript(textStep("a"), textStep("b"), textStep("c"))
			guarded := wrap(m, lim)
			for range 3 {
				if _, err := guarded(context.Background(), question(tc.tools...)); err != nil {
					t.Fatal(err)
				}
			}
			var got []guard.Event
			for _, e := range rec.all() {
				if e.Kind == guard.EventMisconfigured {
					got = append(got, e)
				}
			}
			if len(got) != tc.want {
				t.Fatalf("WithToolName(%q) over 3 calls: %d EventMisconfigured (%v), want %d", tc.limit, len(got), got, tc.want)
			}
			if tc.want == 0 {
				return
			}
			e := got[0]
			if !errors.Is(e.Err, guard.ErrToolNotOffered) || e.Tool != tc.limit || e.Middleware != "ToolCallLimit" {
				t.Errorf("event = %+v, want Tool %q, Middleware ToolCallLimit, Err wrapping ErrToolNotOffered", e, tc.limit)
			}
			for _, want := range []string{`"getWeather"`, `"get_weather"`, `"search"`} {
				if !strings.Contains(e.Err.Error(), want) {
					t.Errorf("event error %q does not mention %s", e.Err, want)
				}
			}
		})
	}
}

// TestToolNameReportedPerLimiter: the "once" lives in the limiter value,
// not in the process: a second limiter reports its own mistake.
func TestToolNameReportedPerLimiter(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	newLimiter := func() guard.Middleware[*tReq, *tResp] {
		return toolCallLimit(guard.WithRunLimit(5), guard.WithToolName("getWeather"), guard.WithEventHandler(rec.handle))
	}
	for range 2 {
		m := newScript(textStep("a"))
		if _, err := run(m, question(weatherTool), newLimiter()); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.kinds(); !slices.Equal(got, []guard.EventKind{guard.EventMisconfigured, guard.EventMisconfigured}) {
		t.Errorf("two limiters, one call each: events %v, want one EventMisconfigured each", got)
	}
}

// TestLogEventsWarnsOnMisconfiguration: the events that point at a wiring
// mistake are logged at Warn, where a default logger shows them.
func TestLogEventsWarnsOnMisconfiguration(t *testing.T) {
	t.Parallel()
	for _, k := range []guard.EventKind{guard.EventMisconfigured, guard.EventEmptyResponse, guard.EventSchemaError} {
		var buf bytes.Buffer
		log := guard.LogEvents(slog.New(slog.NewTextHandler(&buf, nil)))
		log(context.Background(), guard.Event{Kind: k})
		if !strings.Contains(buf.String(), "level=WARN") {
			t.Errorf("LogEvents(%s) logged %q, want level WARN", k, buf.String())
		}
	}
}

// TestLimitInsideValidation: a ToolCallLimit placed inside a
// ToolArgValidation counts the calls validation rejects; it is reported once
// per limiter. The recommended order (Chain's doc) is not.
func TestLimitInsideValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		stack func(lim guard.Middleware[*tReq, *tResp]) []guard.Middleware[*tReq, *tResp]
		want  int
	}{
		{"limiter inside validation", func(lim guard.Middleware[*tReq, *tResp]) []guard.Middleware[*tReq, *tResp] {
			return []guard.Middleware[*tReq, *tResp]{toolArgValidation(), lim}
		}, 1},
		{"limiter outside validation", func(lim guard.Middleware[*tReq, *tResp]) []guard.Middleware[*tReq, *tResp] {
			return []guard.Middleware[*tReq, *tResp]{lim, toolArgValidation()}
		}, 0},
		{"limiter alone", func(lim guard.Middleware[*tReq, *tResp]) []guard.Middleware[*tReq, *tResp] {
			return []guard.Middleware[*tReq, *tResp]{lim}
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			lim := toolCallLimit(guard.WithRunLimit(5), guard.WithEventHandler(rec.handle))
			m := newScript(textStep("a"), textStep("b"))
			guarded := wrap(m, tc.stack(lim)...)
			for range 2 {
				if _, err := guarded(context.Background(), question(weatherTool)); err != nil {
					t.Fatal(err)
				}
			}
			var got []guard.Event
			for _, e := range rec.all() {
				if e.Kind == guard.EventMisconfigured {
					got = append(got, e)
				}
			}
			if len(got) != tc.want {
				t.Fatalf("%s, 2 calls: %d EventMisconfigured (%v), want %d", tc.name, len(got), got, tc.want)
			}
			if tc.want > 0 && !errors.Is(got[0].Err, guard.ErrLimitInsideValidation) {
				t.Errorf("event error = %v, want ErrLimitInsideValidation", got[0].Err)
			}
		})
	}
}
