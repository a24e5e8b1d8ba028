package httpguard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// chatRawSSE answers with body, a whole event stream, in one write.
func chatRawSSE(body string) fp.Step {
	return fp.Handle(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	})
}

// The bound is on what the assembler holds, not on the events' bytes: a
// stream of 30,000 small text chunks whose events pass MaxBody (each
// carries an obfuscation member, as OpenAI's do) but whose text is 150 KB
// reaches the client whole.
func TestChatStreamBoundOnTextNotEnvelope(t *testing.T) {
	t.Parallel()
	const chunks = 30000
	pad := strings.Repeat("x", 200)
	var body, want strings.Builder
	body.WriteString(chatChunkEvent(`{"role":"assistant","content":""}`) + "\n\n")
	for i := range chunks {
		s := fmt.Sprintf("%05d", i)
		want.WriteString(s)
		body.WriteString(`data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o","obfuscation":"` + pad +
			`","choices":[{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}]}` + "\n\n")
	}
	body.WriteString(`data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	if body.Len() <= MaxBody {
		t.Fatalf("the stream is %d bytes, want more than MaxBody", body.Len())
	}
	srv := fp.New(chatRawSSE(body.String()))
	defer srv.Close()
	c := wireCases(t)[1] // openai-chat/stream
	ex := do(t, New(nil, ToolArgValidation(guard.WithFailClosed())), context.Background(), srv.URL+c.url, c.body)
	evs := events(t, ex.body)
	last := evs[len(evs)-1]
	if ex.resp.StatusCode != http.StatusOK || string(last.Data) != "[DONE]" {
		t.Fatalf("status %d; the stream ends with %.300s, want [DONE]", ex.resp.StatusCode, last.Data)
	}
	if got := guardText(t, wireCase{w: chatWire{}}, assemble(t, chatWire{}, evs)); got != want.String() {
		t.Errorf("the client reads %d bytes of text, want %d", len(got), want.Len())
	}
}

// Argument fragments that add up past MaxBody, each event well under it,
// are still refused before anything reached the client: 502
// response_too_large.
func TestChatStreamHeldArgumentsPastTheBound(t *testing.T) {
	t.Parallel()
	frag := strings.Repeat("x", 1<<20)
	var body strings.Builder
	body.WriteString(chatChunkEvent(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_big","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\""}}]}`) + "\n\n")
	for range MaxBody/len(frag) + 1 {
		body.WriteString(chatChunkEvent(`{"tool_calls":[{"index":0,"function":{"arguments":"`+frag+`"}}]}`) + "\n\n")
	}
	srv := fp.New(chatRawSSE(body.String()))
	defer srv.Close()
	c := wireCases(t)[1]
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+c.url, c.body)
	typ, _ := errorType(t, chatWire{}, ex.body)
	if ex.resp.StatusCode != http.StatusBadGateway || typ != "response_too_large" {
		t.Errorf("the client got %d, type %q: %.300s; want 502 response_too_large", ex.resp.StatusCode, typ, ex.body)
	}
}
