package sdktest

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/tmc/langchaingo/llms"
	lcanthropic "github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/googleai"
	lcopenai "github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
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
				o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL))
			}, googleai.WithHTTPClient(guardedClient(&events)))
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
		// Failing open, the stream the guard cannot read passes as it
		// came, with an unguarded event naming why.
		if len(reqs) != 1 || len(events) != 1 || events[0].Kind != guard.EventUnguarded ||
			!strings.Contains(events[0].Err.Error(), "not an event stream") ||
			!jsonEq(t, calls[0].FunctionCall.Arguments, `{"city":42}`) || streamed.String() != "Let me check." {
			t.Errorf("stream: %d requests, events %v, call %s, streamed %q; want the answer passed through as it came, with one unguarded event",
				len(reqs), events, calls[0].FunctionCall.Arguments, streamed.String())
		}
	}
	if l := log.String(); strings.Contains(l, "cannot be guarded") {
		t.Errorf("the transport's reports: %s", l)
	}
}

// Failing closed through the transport reaches go-openai and langchaingo's
// openai, anthropic and googleai clients as the error of their call,
// naming the violation, and each sends the call once: none retries the
// guard's 422.
func TestGuardedFailClosedOtherClients(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tools := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "get_weather", Parameters: weatherParams()}}}
	clients := []struct {
		name string
		call func(t *testing.T, srv *fp.Server, hc *http.Client) error
	}{
		{"go-openai", func(_ *testing.T, srv *fp.Server, hc *http.Client) error {
			cfg := goopenai.DefaultConfig("sk-test")
			cfg.BaseURL, cfg.HTTPClient = srv.URL+"/v1", hc
			_, err := goopenai.NewClientWithConfig(cfg).CreateChatCompletion(ctx, goopenaiRequest())
			return err
		}},
		{"langchaingo openai", func(t *testing.T, srv *fp.Server, hc *http.Client) error {
			m, err := lcopenai.New(lcopenai.WithBaseURL(srv.URL+"/v1"), lcopenai.WithToken("sk-test"), lcopenai.WithModel("gpt-4o"), lcopenai.WithHTTPClient(hc))
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.GenerateContent(ctx, lcMessages(), llms.WithTools(tools))
			return err
		}},
		{"langchaingo anthropic", func(t *testing.T, srv *fp.Server, hc *http.Client) error {
			m, err := lcanthropic.New(lcanthropic.WithBaseURL(srv.URL+"/v1"), lcanthropic.WithToken("sk-ant-test"),
				lcanthropic.WithModel("claude-sonnet-4-5"), lcanthropic.WithHTTPClient(hc))
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.GenerateContent(ctx, lcMessages(), llms.WithTools(tools))
			return err
		}},
		{"langchaingo googleai", func(t *testing.T, srv *fp.Server, hc *http.Client) error {
			m, err := googleai.New(ctx, googleai.WithAPIKey("g-test"), googleai.WithRest(), googleai.WithDefaultModel("gemini-2.5-flash"),
				googleai.WithHTTPClient(hc), func(o *googleai.Options) { o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL)) })
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			_, err = m.GenerateContent(ctx, lcMessages(), llms.WithTools(tools))
			return err
		}},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bad := fp.Reply(fp.Call("get_weather", `{"city": 42}`))
			srv := fp.New(bad, bad, bad, bad, bad, bad)
			defer srv.Close()
			sent := &countingTransport{base: httpguard.New(nil, httpguard.ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed()))}
			err := c.call(t, srv, &http.Client{Transport: sent})
			if err == nil || !strings.Contains(err.Error(), "/city") {
				t.Errorf("err %v, want the refusal naming /city", err)
			}
			if n := sent.n(); n != 1 {
				t.Errorf("the client sent %d requests, want 1", n)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("the provider got %d requests, want 2", n)
			}
			t.Logf("%s: %T: %.120s", c.name, err, err)
		})
	}
}

// langchaingo's googleai client retries on its own, unlike langchaingo's
// other clients: generative-ai-go's REST client (gax) repeats a 503 with
// backoff from about a second, until the call's context ends; a 429 it
// does not repeat. The context here ends after 2.5 s, so a 503 is sent
// at least twice.
func TestGoogleAIRetriesA503ItSelf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status  int
		atLeast int
		atMost  int
	}{{http.StatusTooManyRequests, 1, 1}, {http.StatusServiceUnavailable, 2, 10}} {
		e := fp.Error(tc.status, "retry-after-ms", "1", "Retry-After", "0")
		srv := fp.New(e, e, e, e, e, e, e, e, e, e)
		defer srv.Close()
		m, err := googleai.New(context.Background(), googleai.WithAPIKey("g-test"), googleai.WithRest(), googleai.WithHTTPClient(&http.Client{}),
			func(o *googleai.Options) { o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL)) })
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		_, err = m.GenerateContent(ctx, lcMessages(), llms.WithTools(lcTools()))
		cancel()
		n := len(srv.Requests())
		if err == nil || n < tc.atLeast || n > tc.atMost {
			t.Errorf("%d: %d requests (err %v), want %d to %d", tc.status, n, err, tc.atLeast, tc.atMost)
		}
		t.Logf("%d: %d requests within the call's 2.5 s", tc.status, n)
	}
}
