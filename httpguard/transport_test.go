package httpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// exchange is one client request through a Transport and what came back.
type exchange struct {
	resp *http.Response
	body []byte
}

// do sends body to srv's path through rt, as an SDK would.
func do(t *testing.T, rt http.RoundTripper, ctx context.Context, url string, body []byte, header ...string) exchange {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return exchange{resp, b}
}

// wireCase is a protocol's recorded request, sync or streaming.
type wireCase struct {
	name   string
	w      wireProtocol
	dir    string
	url    string // path and query
	body   []byte
	stream bool
}

func wireCases(t *testing.T) []wireCase {
	var out []wireCase
	for _, p := range protocols {
		out = append(out,
			wireCase{p.dir + "/sync", p.w, p.dir, p.path, fixture(t, p.dir, "request.json"), false},
			wireCase{p.dir + "/stream", p.w, p.dir, streamURL(p.streamPath), fixture(t, p.dir, "stream-request.json"), true})
	}
	return out
}

func streamURL(path string) string {
	if strings.Contains(path, ":streamGenerateContent") {
		return path + "?alt=sse"
	}
	return path
}

// clientRead is what a client reads of an answer: a sync body, or a stream
// assembled by the protocol's assembler (each SDK's accumulator is tested
// in httpguard/sdktest).
func clientRead(t *testing.T, c wireCase, ex exchange) []byte {
	t.Helper()
	if ex.resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", ex.resp.StatusCode, ex.body)
	}
	if !c.stream {
		return ex.body
	}
	return assemble(t, c.w, events(t, ex.body))
}

func callsOf(t *testing.T, w wireProtocol, resp []byte) []wireCall {
	t.Helper()
	calls, err := w.calls(resp)
	if err != nil {
		t.Fatalf("calls: %v\n%s", err, resp)
	}
	return calls
}

// A bad call is caught, fed back in the protocol's shape and the corrected
// call reaches the client, sync and streamed, in every protocol.
func TestTransportBadThenGood(t *testing.T) {
	t.Parallel()
	for _, c := range wireCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(
				fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": 42}`)),
				fp.Reply(fp.Text("Sorry."), fp.Call("get_weather", `{"city": "Paris"}`)))
			defer srv.Close()
			var kinds []guard.EventKind
			tr := New(nil, ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) { kinds = append(kinds, e.Kind) })))
			ex := do(t, tr, context.Background(), srv.URL+c.url, c.body, "Authorization", "Bearer sk-test", "X-Vendor", "v 1", "Anthropic-Beta", "tools-2025")
			got := clientRead(t, c, ex)
			calls := callsOf(t, c.w, got)
			if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
				t.Fatalf("the client reads %+v, want the corrected call", calls)
			}
			if strings.Contains(string(ex.body), "42") {
				t.Errorf("the client read the rejected call:\n%s", ex.body)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the provider got %d requests, want 2", len(reqs))
			}
			if !bytes.Equal(reqs[0].Body, c.body) {
				t.Errorf("the first request is not the client's:\n%s\nwant\n%s", reqs[0].Body, c.body)
			}
			// The re-ask is the client's request plus the rejected turn and
			// one tool result: every member of the original is still there.
			var orig, reask map[string]json.RawMessage
			if json.Unmarshal(c.body, &orig) != nil || json.Unmarshal(reqs[1].Body, &reask) != nil {
				t.Fatal("bodies are not JSON objects")
			}
			for k := range orig {
				if _, ok := reask[k]; !ok {
					t.Errorf("the re-ask lost %q", k)
				}
			}
			if !strings.Contains(string(reqs[1].Body), `/city`) || !strings.Contains(string(reqs[1].Body), `42`) {
				t.Errorf("the re-ask does not replay the call and its violation:\n%s", reqs[1].Body)
			}
			if reqs[1].RawQuery != reqs[0].RawQuery || reqs[1].Path != reqs[0].Path {
				t.Errorf("the re-ask went to %s?%s, want %s?%s", reqs[1].Path, reqs[1].RawQuery, reqs[0].Path, reqs[0].RawQuery)
			}
			if h0, h1 := without(reqs[0].Header, "Content-Length"), without(reqs[1].Header, "Content-Length"); !sameHeader(h0, h1) ||
				h1.Get("Authorization") != "Bearer sk-test" || h1.Get("X-Vendor") != "v 1" {
				t.Errorf("the re-ask's headers %v, want the client's %v", h1, h0)
			}
			if len(kinds) < 2 || kinds[0] != guard.EventInvalid {
				t.Errorf("events %v, want invalid, reask", kinds)
			}
			if c.stream && !strings.Contains(guardText(t, c, got), "Let me check.") {
				t.Errorf("the streamed text is %q, want the first attempt's", guardText(t, c, got))
			}
		})
	}
}

// guardText is the answer text of a response.
func guardText(t *testing.T, c wireCase, resp []byte) string {
	t.Helper()
	text, err := c.w.text(resp)
	if err != nil {
		t.Fatalf("text: %v", err)
	}
	return text
}

// Gemini's stream without alt=sse (a JSON array, as langchaingo's googleai
// client asks for it) cannot be gated: it passes through untouched, read
// as it comes after RoundTrip returned, and is reported at Warn.
func TestGeminiArrayStreamPassesThrough(t *testing.T) {
	log := captureLog(t)
	release := make(chan struct{})
	first, rest := `[{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me check."}]}}]}`,
		`,{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":42}}}]},"finishReason":"STOP"}]}]`
	srv := fp.New(fp.Handle(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		<-release // the rest comes once the client has its response
		io.WriteString(w, rest)
	}))
	defer srv.Close()
	body := fixture(t, "gemini", "stream-request.json")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent", bytes.NewReader(body))
	resp, err := (&http.Client{Transport: New(nil, ToolArgValidation())}).Do(req)
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || string(got) != first+rest {
		t.Errorf("the client got %d, %v:\n%s\nwant\n%s", resp.StatusCode, err, got, first+rest)
	}
	if !strings.Contains(log.String(), "not an event stream") {
		t.Errorf("log: %s", log.String())
	}
}
