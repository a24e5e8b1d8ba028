package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/validation"
)

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
			m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_city_weather", `{"city": 1}`)))
			resp, err := run(t, m, []llms.Tool{tool("get_city_weather", cityArgs{})}, middleware.ToolArgValidation(opts...))
			e, ok := rec.find(guard.EventSchemaError)
			if !ok || !errors.Is(e.Err, validation.ErrNoKeyword) || e.Tool != "get_city_weather" {
				t.Errorf("events = %v, want an EventSchemaError for get_city_weather wrapping validation.ErrNoKeyword", rec.all())
			}
			var se *guard.SchemaError
			switch {
			case failClosed && (!errors.As(err, &se) || !errors.Is(err, validation.ErrNoKeyword)):
				t.Errorf("GenerateContent = %v, want a *guard.SchemaError wrapping validation.ErrNoKeyword", err)
			case !failClosed && (err != nil || args(resp, 0) != `{"city": 1}`):
				t.Errorf("GenerateContent = %v, %v, want the call passed on unvalidated (fail open)", resp, err)
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
		tools []llms.Tool
		want  int // EventMisconfigured reported over three calls
	}{
		{"name of no offered tool", "getWeather", []llms.Tool{weatherTool, searchTool}, 1},
		{"name of an offered tool", "get_weather", []llms.Tool{weatherTool, searchTool}, 0},
		{"request offers no tools", "getWeather", nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			lim := middleware.ToolCallLimit(guard.WithRunLimit(5), guard.WithToolName(tc.limit),
				guard.WithEventHandler(rec.handle))
			m := fakemodel.New(fakemodel.Text("a"), fakemodel.Text("b"), fakemodel.Text("c"))
			guarded := middleware.Wrap(m, lim)
			for range 3 {
				var opts []llms.CallOption
				if tc.tools != nil {
					opts = append(opts, llms.WithTools(tc.tools))
				}
				if _, err := guarded.GenerateContent(context.Background(), question, opts...); err != nil {
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
	newLimiter := func() middleware.Middleware {
		return middleware.ToolCallLimit(guard.WithRunLimit(5), guard.WithToolName("getWeather"), guard.WithEventHandler(rec.handle))
	}
	for range 2 {
		m := fakemodel.New(fakemodel.Text("a"))
		if _, err := run(t, m, []llms.Tool{weatherTool}, newLimiter()); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.kinds(); !slices.Equal(got, []guard.EventKind{guard.EventMisconfigured, guard.EventMisconfigured}) {
		t.Errorf("two limiters, one call each: events %v, want one EventMisconfigured each", got)
	}
}

// TestEmptyResponse: a response to a request offering tools with neither a
// tool call nor text is reported (langchaingo's native ollama client makes
// them); a text answer, or a request without tools, is not.
func TestEmptyResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		step  fakemodel.Step
		tools []llms.Tool
		want  bool
	}{
		{"no text, no call, tools offered", fakemodel.Text(""), []llms.Tool{weatherTool}, true},
		{"blank text, tools offered", fakemodel.Text(" \n"), []llms.Tool{weatherTool}, true},
		{"no choices, tools offered", fakemodel.Response(&llms.ContentResponse{}), []llms.Tool{weatherTool}, true},
		{"text, tools offered", fakemodel.Text("It is sunny."), []llms.Tool{weatherTool}, false},
		{"no text, no tools offered", fakemodel.Text(""), nil, false},
		{"a tool call", fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city":"Paris"}`)), []llms.Tool{weatherTool}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			resp, err := run(t, fakemodel.New(tc.step), tc.tools, middleware.ToolArgValidation(guard.WithEventHandler(rec.handle)))
			if err != nil || resp == nil {
				t.Fatalf("GenerateContent = %v, %v, want the response as is", resp, err)
			}
			e, got := rec.find(guard.EventEmptyResponse)
			if got != tc.want {
				t.Fatalf("events = %v, want EventEmptyResponse: %v", rec.all(), tc.want)
			}
			if got && (!errors.Is(e.Err, guard.ErrEmptyResponse) || !strings.Contains(e.Err.Error(), "/v1")) {
				t.Errorf("event error = %v, want ErrEmptyResponse naming the /v1 endpoint", e.Err)
			}
		})
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

// TestReadmeStackLogsMistakes wires the recommended stack with LogEvents first
// and makes two newcomer mistakes the package doc names ("Mistakes"): a Go struct value as a tool's
// Parameters and a WithToolName with the wrong spelling. Both reach the log
// at Warn.
func TestReadmeStackLogsMistakes(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, nil))
	logEvents := guard.WithEventHandler(guard.LogEvents(logger))
	m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 1}`)))
	guarded := middleware.Wrap(m,
		middleware.ToolCallLimit(guard.WithRunLimit(20), guard.WithToolName("getWeather"), logEvents),
		middleware.ToolArgValidation(logEvents),
		middleware.ModelRetry(logEvents),
	)
	_, err := guarded.GenerateContent(context.Background(), question,
		llms.WithTools([]llms.Tool{tool("get_weather", cityArgs{})}))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{`level=WARN msg="toolguard: misconfigured"`, `level=WARN msg="toolguard: schema_error"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log = %q, want a line with %s", out, want)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestLimitInsideValidation: a ToolCallLimit placed inside a
// ToolArgValidation counts the calls validation rejects; it is reported once
// per limiter. The recommended order (Chain's doc) is not.
func TestLimitInsideValidation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		stack func(lim middleware.Middleware) []middleware.Middleware
		want  int
	}{
		{"limiter inside validation", func(lim middleware.Middleware) []middleware.Middleware {
			return []middleware.Middleware{middleware.ToolArgValidation(), lim}
		}, 1},
		{"limiter outside validation", func(lim middleware.Middleware) []middleware.Middleware {
			return []middleware.Middleware{lim, middleware.ToolArgValidation()}
		}, 0},
		{"limiter alone", func(lim middleware.Middleware) []middleware.Middleware {
			return []middleware.Middleware{lim}
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			lim := middleware.ToolCallLimit(guard.WithRunLimit(5), guard.WithEventHandler(rec.handle))
			m := fakemodel.New(fakemodel.Text("a"), fakemodel.Text("b"))
			guarded := middleware.Wrap(m, tc.stack(lim)...)
			for range 2 {
				if _, err := guarded.GenerateContent(context.Background(), question, llms.WithTools([]llms.Tool{weatherTool})); err != nil {
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
