package sdktest

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"google.golang.org/api/option"
)

// logBuffer is an io.Writer safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// captureLog sends slog.Default to a buffer until the test ends. A test
// that uses it must not be parallel: slog.Default is the process's.
func captureLog(t *testing.T) *logBuffer {
	t.Helper()
	buf := &logBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return buf
}

// langchaingo's googleai client (generative-ai-go over REST) given
// httpguard's client. It speaks proto JSON with enum-encoding=int: the
// tool's schema types are numbers ("type": 6 for OBJECT, 1 for STRING).
// Sync, the bad call is re-asked and the corrected call is what
// ToolCalls holds. Streamed, it asks for streamGenerateContent without
// alt=sse and reads a JSON array, not an event stream: the transport
// cannot guard that answer, so it passes it through untouched — the
// client reads the stream whole, the unchecked call included — and
// reports it once at Warn (the package documentation says so).
func TestGuardedLangchaingoGoogleAI(t *testing.T) {
	log := captureLog(t)
	tools := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "get_weather", Parameters: daysParams()}}}
	for _, stream := range []bool{false, true} {
		srv := fp.New(badThenGood()...)
		defer srv.Close()
		var events []guard.Event
		gg, err := googleai.New(context.Background(), googleai.WithAPIKey("g-test"), googleai.WithRest(), googleai.WithDefaultModel("gemini-2.5-flash"),
			func(o *googleai.Options) {
				o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL), option.WithHTTPClient(guardedClient(&events)))
			})
		if err != nil {
			t.Fatal(err)
		}
		defer gg.Close()
		opts := []llms.CallOption{llms.WithTools(tools)}
		var streamed strings.Builder
		if stream {
			opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, b []byte) error { streamed.Write(b); return nil }))
		}
		resp, err := gg.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris for 3 days?")}, opts...)
		if err != nil {
			t.Fatalf("stream %v: %v", stream, err)
		}
		var calls []llms.ToolCall
		for _, ch := range resp.Choices {
			calls = append(calls, ch.ToolCalls...)
		}
		if len(calls) != 1 {
			t.Fatalf("stream %v: calls %+v", stream, calls)
		}
		reqs := srv.Requests()
		if !strings.Contains(string(reqs[0].Body), `"type":6`) || !strings.Contains(reqs[0].RawQuery, "enum-encoding%3Dint") {
			t.Errorf("the client no longer sends numeric enums: %s?%s %s", reqs[0].Path, reqs[0].RawQuery, reqs[0].Body)
		}
		if !stream {
			checkReask(t, srv, events)
			if !jsonEq(t, calls[0].FunctionCall.Arguments, correctedArgs) {
				t.Errorf("sync: the call read %s, want %s", calls[0].FunctionCall.Arguments, correctedArgs)
			}
			continue
		}
		if len(reqs) != 1 || len(events) != 0 || !jsonEq(t, calls[0].FunctionCall.Arguments, `{"city":42}`) || streamed.String() != "Let me check." {
			t.Errorf("stream: %d requests, events %v, call %s, streamed %q; want the answer passed through as it came",
				len(reqs), events, calls[0].FunctionCall.Arguments, streamed.String())
		}
	}
	if l := log.String(); strings.Count(l, "the answer to a streaming request is not an event stream") != 1 || strings.Contains(l, "cannot be guarded") {
		t.Errorf("the transport's reports: %s", l)
	}
}
