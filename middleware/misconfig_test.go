package middleware_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// cityArgs is a tool's argument struct, passed by mistake as the schema.
type cityArgs struct {
	City string `json:"city"`
}

// Package guard tests the stages' own misconfiguration reports over a test
// codec; here, those that name langchaingo: the usual cause of an empty
// response (the codec's Advisor) and the README's stack.

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
