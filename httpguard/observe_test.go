package httpguard

import (
	"context"
	"strings"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// otelguard's observer through Observe: a span per logical call with the
// stages' events, and a "chat {model}" span per upstream request with the
// model the request names and the usage and stop reason of the response,
// sync and streamed.
func TestObserveSpans(t *testing.T) {
	t.Parallel()
	models := map[string]string{"openai-chat": "gpt-4o", "openai-responses": "gpt-4o", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash"}
	for _, c := range wireCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			defer tp.Shutdown(context.Background())
			srv := fp.New(
				fp.Reply(fp.Call("get_weather", `{"city": 42}`)).WithUsage(11, 7),
				fp.Error(429),
				fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)).WithUsage(13, 5))
			defer srv.Close()
			tr := New(nil, Observe(otelguard.New(otelguard.WithTracerProvider(tp), otelguard.WithCaptureContent())), ToolArgValidation(),
				ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })))
			clientRead(t, c, do(t, tr, context.Background(), srv.URL+c.url, c.body))
			var chats []sdktrace.ReadOnlySpan
			var call sdktrace.ReadOnlySpan
			for _, s := range spans.Ended() {
				switch s.Name() {
				case "chat " + models[c.dir]:
					chats = append(chats, s)
				case otelguard.CallSpanName:
					call = s
				}
			}
			if len(chats) != 3 || call == nil {
				t.Fatalf("spans: %d chat %s, call %v; want 3 and 1", len(chats), models[c.dir], call != nil)
			}
			attr := func(s sdktrace.ReadOnlySpan, k string) attribute.Value {
				for _, a := range s.Attributes() {
					if string(a.Key) == k {
						return a.Value
					}
				}
				return attribute.Value{}
			}
			for i, want := range [][2]int64{{11, 7}, {-1, -1}, {13, 5}} {
				in, out := attr(chats[i], "gen_ai.usage.input_tokens"), attr(chats[i], "gen_ai.usage.output_tokens")
				if want[0] < 0 {
					if in.Type() != attribute.EMPTY || attr(chats[i], "error.type").AsString() == "" {
						t.Errorf("span %d (the 429): input tokens %v, error.type %v", i, in, attr(chats[i], "error.type"))
					}
					continue
				}
				if in.AsInt64() != want[0] || out.AsInt64() != want[1] {
					t.Errorf("span %d: usage %v/%v, want %v", i, in, out, want)
				}
				if len(attr(chats[i], "gen_ai.response.finish_reasons").AsStringSlice()) == 0 {
					t.Errorf("span %d: no finish reasons", i)
				}
				// With content capture, the output messages hold the call
				// as the model sent it.
				city := map[int]string{0: `"city":42`, 2: `"city":"Paris"`}[i]
				if out := attr(chats[i], "gen_ai.output.messages").AsString(); !strings.Contains(strings.ReplaceAll(out, " ", ""), city) ||
					!strings.Contains(out, `"tool_call"`) {
					t.Errorf("span %d: output messages %s, want a tool_call with %s", i, out, city)
				}
			}
			names := map[string]bool{}
			for _, e := range call.Events() {
				names[e.Name] = true
			}
			if !names["toolguard.invalid"] || !names["toolguard.reask"] || !names["toolguard.retry"] {
				t.Errorf("call span events %v", names)
			}
		})
	}
}
