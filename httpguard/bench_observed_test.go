package httpguard_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
)

// usageObserver reads what a metrics observer reads of each model call
// (the proxy's: tokens and finish reasons, never the output).
type usageObserver struct{ in, out, finishes int }

func (o *usageObserver) OnEvent(context.Context, guard.Event) {}

func (o *usageObserver) OnModelCall(ctx context.Context, _ guard.ModelCall) (context.Context, func(guard.ModelResult)) {
	return ctx, func(r guard.ModelResult) {
		o.in += r.InputTokens
		o.out += r.OutputTokens
		o.finishes += len(r.FinishReasons)
	}
}

// BenchmarkTransportObserved is BenchmarkTransport's guarded stream with
// an observer in the context (Observe outermost, as the proxy stacks it),
// which reads each call's usage and finish reasons: what observing a
// call adds to it.
func BenchmarkTransportObserved(b *testing.B) {
	for _, p := range []struct{ dir, path, file, contentType string }{
		{"openai-chat", "/v1/chat/completions", "gate-accept.sse", "text/event-stream"},
		{"openai-responses", "/v1/responses", "gate-accept.sse", "text/event-stream"},
		{"anthropic", "/v1/messages", "gate-accept.sse", "text/event-stream"},
		{"gemini", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "gate-accept.sse", "text/event-stream"},
		{"ollama", "/api/chat", "gate-accept.ndjson", "application/x-ndjson"},
		{"bedrock", "/model/us.anthropic.claude-sonnet-4-v1%3A0/converse-stream", "gate-accept.eventstream", "application/vnd.amazon.eventstream"},
	} {
		body, resp := readFixture(b, p.dir, "stream-request.json"), readFixture(b, p.dir, p.file)
		b.Run(p.dir+"/stream/observed", func(b *testing.B) {
			o := &usageObserver{}
			c := &http.Client{Transport: httpguard.New(fixed{p.contentType, resp}, httpguard.Observe(o), httpguard.ToolArgValidation())}
			b.ReportAllocs()
			b.SetBytes(int64(len(resp)))
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, "http://provider.test"+p.path, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer sk-bench")
				got, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, got.Body)
				got.Body.Close()
				if got.StatusCode != http.StatusOK || n == 0 {
					b.Fatalf("status %d, %d bytes", got.StatusCode, n)
				}
			}
			if o.finishes == 0 {
				b.Fatal("the observer read no finish reason")
			}
		})
	}
}
