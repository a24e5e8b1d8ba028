package httpguard

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// A streaming request that offers no tools has no calls to hold: its
// stream reaches the client byte for byte as the upstream sends it, with
// no bound (here 40,000 text chunks, 9 MiB of SSE past MaxBody), while a
// stage's stand-in answer to it (a model-call limit) is still a stream.
func TestStreamWithoutToolsPassesWhole(t *testing.T) {
	var sse bytes.Buffer
	for i := range 40000 {
		fmt.Fprintf(&sse, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"system_fingerprint\":\"fp_fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%05d \"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", i)
	}
	sse.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	if sse.Len() <= MaxBody {
		t.Fatalf("the stream is %d bytes, want it past MaxBody", sse.Len())
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(sse.Bytes())
	}))
	defer srv.Close()
	body := []byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Write a long story."}]}`)
	tr := New(nil, ToolCallLimit(guard.WithRunLimit(1)), ToolArgValidation(guard.WithFailClosed()), ModelRetry())
	ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", body)
	if ex.resp.StatusCode != http.StatusOK || !bytes.Equal(ex.body, sse.Bytes()) {
		t.Fatalf("the client read %d, %d bytes (%s), want the upstream's %d bytes as they came", ex.resp.StatusCode, len(ex.body), firstLine(ex.body), sse.Len())
	}

	ctx := guard.WithRun(context.Background())
	tr = New(nil, ModelCallLimit(guard.WithRunLimit(1)), ToolArgValidation())
	do(t, tr, ctx, srv.URL+"/v1/chat/completions", body)
	ex = do(t, tr, ctx, srv.URL+"/v1/chat/completions", body)
	if ex.resp.StatusCode != http.StatusOK || !strings.HasPrefix(ex.resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("a limit's stand-in answer to a stream: %d %q, want a 200 event stream", ex.resp.StatusCode, ex.resp.Header.Get("Content-Type"))
	}
	c := wireCase{name: "chat/stream", w: chatWire{}, stream: true}
	got := guardText(t, c, clientRead(t, c, ex))
	if !strings.Contains(got, "limit") {
		t.Errorf("the stand-in stream's text = %q, want the limit's answer", got)
	}
}
