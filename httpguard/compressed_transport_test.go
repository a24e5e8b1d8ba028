package httpguard

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"time"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// codingCase is a Content-Encoding label and the codings that make it, in
// the order applied. "deflate-raw" is deflate without the zlib wrapper,
// which is labelled deflate.
type codingCase struct {
	label   string
	codings []string
}

var codingCases = []codingCase{
	{"gzip", []string{"gzip"}},
	{"deflate", []string{"deflate"}},
	{"deflate", []string{"deflate-raw"}},
	{"br", []string{"br"}},
	{"gzip, br", []string{"gzip", "br"}},
}

func (c codingCase) name() string { return strings.Join(c.codings, "+") }

// compressingGateway is a gateway in front of upstream, on a loopback
// server of its own, that encodes every answer with c's codings and labels
// it with c's Content-Encoding, whatever the request's Accept-Encoding; it
// flushes each coding when the upstream flushes (the reverse proxy does at
// every event of a stream). encoded counts the answers it encoded.
func compressingGateway(t *testing.T, upstream string, c codingCase) (srv *httptest.Server, encoded *atomic.Int64) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	encoded = new(atomic.Int64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &compressWriter{ResponseWriter: w, c: c, encoded: encoded}
		defer cw.close()
		proxy.ServeHTTP(cw, r)
	}))
	t.Cleanup(srv.Close)
	return srv, encoded
}

// compressWriter encodes what an http.Handler writes, and counts the
// answers it began to encode before any of their bytes leave (so the
// count is right by the time the client has its answer).
type compressWriter struct {
	http.ResponseWriter
	c       codingCase
	encoded *atomic.Int64
	layers  []flushWriteCloser // the first applied first
}

func (w *compressWriter) WriteHeader(code int) {
	if w.layers != nil {
		return
	}
	w.encoded.Add(1)
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Encoding", w.c.label)
	var dst io.Writer = w.ResponseWriter
	w.layers = make([]flushWriteCloser, len(w.c.codings))
	for i := len(w.c.codings) - 1; i >= 0; i-- {
		w.layers[i] = newEncoder(w.c.codings[i], dst)
		dst = w.layers[i]
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *compressWriter) Write(p []byte) (int, error) {
	if w.layers == nil {
		w.WriteHeader(http.StatusOK)
	}
	return w.layers[0].Write(p)
}

func (w *compressWriter) Flush() {
	for _, l := range w.layers {
		_ = l.Flush()
	}
	w.ResponseWriter.(http.Flusher).Flush()
}

func (w *compressWriter) close() {
	for _, l := range w.layers {
		_ = l.Close()
	}
}

// acceptEncoding is what a client that asks for compressed answers sends:
// with it set, Go's http.Transport leaves the answer encoded.
var acceptEncoding = []string{"Accept-Encoding", "gzip, deflate, br"}

// An answer compressed by the upstream (or a gateway) is decoded before
// the guard reads it, sync and streamed, in every protocol and for every
// coding (gzip, deflate with and without its zlib wrapper, br, and gzip
// then br): the invalid call is re-asked (the re-ask's answer is decoded
// too) and the client reads the corrected call in identity encoding, with
// no Content-Encoding and, sync, the decoded length. Before, a sync answer
// passed through unguarded and a stream became an empty answer.
func TestCompressedAnswersGuarded(t *testing.T) {
	t.Parallel()
	for _, cc := range codingCases {
		for _, c := range wireCases(t) {
			t.Run(cc.name()+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				up := fp.New(
					fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": 42}`)),
					fp.Reply(fp.Text("Sorry."), fp.Call("get_weather", `{"city": "Paris"}`)))
				defer up.Close()
				gw, encoded := compressingGateway(t, up.URL, cc)
				ex := do(t, New(nil, ToolArgValidation()), context.Background(), gw.URL+c.url, c.body, acceptEncoding...)
				if enc := ex.resp.Header.Values("Content-Encoding"); len(enc) != 0 {
					t.Errorf("the client's response says Content-Encoding %q, want none (identity)", enc)
				}
				if !c.stream && (ex.resp.ContentLength != int64(len(ex.body)) || ex.resp.Header.Get("Content-Length") != strconv.Itoa(len(ex.body))) {
					t.Errorf("Content-Length %d (header %q), want the decoded length %d", ex.resp.ContentLength, ex.resp.Header.Get("Content-Length"), len(ex.body))
				}
				got := clientRead(t, c, ex)
				calls := callsOf(t, c.w, got)
				if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
					t.Fatalf("the client reads %+v, want the corrected call", calls)
				}
				if reqs := up.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), `42`) {
					t.Errorf("the upstream got %d requests, want the request and a re-ask replaying the call", len(reqs))
				}
				if n := encoded.Load(); n != 2 {
					t.Errorf("the gateway encoded %d answers, want 2 (the answer and the re-ask's)", n)
				}
				if c.stream && !strings.Contains(guardText(t, c, got), "Let me check.") {
					t.Errorf("the streamed text is %q, want the first attempt's", guardText(t, c, got))
				}
			})
		}
	}
}

// A compressed stream is decoded as its bytes arrive: the client reads
// the first event while the upstream still holds the rest of the stream,
// for every coding. (A decoder that waited for the end would hold the
// event until the upstream finished; before, the first event never came.)
func TestCompressedStreamDecodedAsItArrives(t *testing.T) {
	t.Parallel()
	c := wireCases(t)[1] // openai-chat/stream
	first := chatChunkEvent(`{"role":"assistant","content":"Let me check."}`)
	rest := []string{
		chatChunkEvent(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]}`),
		`data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`data: [DONE]`,
	}
	for _, cc := range codingCases {
		t.Run(cc.name(), func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			up := fp.New(fp.Handle(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, first+"\n\n")
				w.(http.Flusher).Flush()
				select { // the rest comes once the client read the first event
				case <-release:
				case <-r.Context().Done():
					return
				}
				for _, ev := range rest {
					io.WriteString(w, ev+"\n\n")
					w.(http.Flusher).Flush()
				}
			}))
			defer up.Close()
			gw, _ := compressingGateway(t, up.URL, cc)
			defer close(release)
			req, _ := http.NewRequest(http.MethodPost, gw.URL+c.url, bytes.NewReader(c.body))
			req.Header.Set(acceptEncoding[0], acceptEncoding[1])
			type result struct {
				resp *http.Response
				head []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := New(nil, ToolArgValidation()).RoundTrip(req)
				if err != nil {
					done <- result{err: err}
					return
				}
				rd := newSSEReader(resp.Body, MaxBody)
				ev, err := rd.next()
				done <- result{resp, ev.Data, err}
			}()
			var res result
			select {
			case res = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the client read no event while the upstream held the rest of its stream")
			}
			if res.err != nil {
				t.Fatal(res.err)
			}
			defer res.resp.Body.Close()
			if !strings.Contains(string(res.head), "Let me check.") || res.resp.Header.Get("Content-Encoding") != "" {
				t.Fatalf("the client's first event (Content-Encoding %q): %s", res.resp.Header.Get("Content-Encoding"), res.head)
			}
			release <- struct{}{}
			tail, err := io.ReadAll(res.resp.Body)
			if err != nil || !strings.Contains(string(tail), "Paris") {
				t.Errorf("the rest of the stream: %v\n%s", err, tail)
			}
		})
	}
}

// rawUpstream answers every request with body, labelled with
// Content-Type ct and Content-Encoding enc.
func rawUpstream(t *testing.T, ct, enc string, body []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Encoding", enc)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// An answer the guard cannot decode (a coding it does not know, a body
// that is not what its coding says) is an answer it cannot read. Failing
// closed, the client never reads it as a 200, sync or streamed: a 502 of
// type response_unguardable. Failing open, a coding it does not know
// passes as it came (with an unguarded event), while a body that stops
// decoding part-way is refused all the same: part of it was read. Before,
// the sync answer passed through unguarded and the stream became an empty
// answer.
func TestUndecodableAnswerNotPassed(t *testing.T) {
	t.Parallel()
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": 42}"}}]},"finish_reason":"tool_calls"}]}`)
	events := []byte(chatChunkEvent(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": 42}"}}]}`) + "\n\ndata: [DONE]\n\n")
	corrupt := func(b []byte) []byte {
		gz := encode(t, b, "gzip")
		gz[10] = 0xff // after gzip's header, a deflate block of the reserved type
		return gz
	}
	cut := func(b []byte) []byte {
		gz := encode(t, b, "gzip")
		return gz[:len(gz)/2]
	}
	for _, tc := range []struct {
		name, enc string
		sync      []byte
		stream    []byte
	}{
		{"unknown coding", "zstd", encode(t, answer, "gzip"), encode(t, events, "gzip")},
		{"corrupt gzip", "gzip", corrupt(answer), corrupt(events)},
		{"gzip cut short", "gzip", cut(answer), cut(events)},
		{"not gzip", "gzip", answer, events},
	} {
		for _, c := range wireCases(t)[:2] { // openai-chat sync and stream
			t.Run(tc.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				body, ct := tc.sync, "application/json"
				if c.stream {
					body, ct = tc.stream, "text/event-stream"
				}
				srv := rawUpstream(t, ct, tc.enc, body)
				req, _ := http.NewRequest(http.MethodPost, srv.URL+c.url, bytes.NewReader(c.body))
				req.Header.Set(acceptEncoding[0], acceptEncoding[1])
				if tc.enc == "zstd" {
					var ev eventLog
					req, _ := http.NewRequest(http.MethodPost, srv.URL+c.url, bytes.NewReader(c.body))
					req.Header.Set(acceptEncoding[0], acceptEncoding[1])
					resp, err := New(nil, ToolArgValidation(guard.WithEventHandler(ev.add))).RoundTrip(req)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || !bytes.Equal(b, body) || ev.count(guard.EventUnguarded) != 1 {
						t.Errorf("failing open: %d, %d bytes, events %v; want the answer as it came and one unguarded event", resp.StatusCode, len(b), ev.kinds())
					}
				}
				resp, err := New(nil, ToolArgValidation(guard.WithFailClosed())).RoundTrip(req)
				if err != nil {
					t.Fatalf("RoundTrip: %v, want a 502", err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusBadGateway {
					t.Fatalf("the client got %d (Content-Encoding %q), %d bytes: %.200q; want the unguardable error or a 502", resp.StatusCode, resp.Header.Get("Content-Encoding"), len(b), b)
				}
				if typ, _ := errorType(t, c.w, b); typ != responseUnguardable {
					t.Errorf("the 502's type is %q, want %s", typ, responseUnguardable)
				}
			})
		}
	}
}

// countingTransport counts the bytes read of its answers' bodies: what
// the transport took of the wire.
type countingTransport struct{ n *atomic.Int64 }

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, c.n}
	}
	return resp, err
}

// Through the transport, a sync bomb is the body past the bound (reported
// at Warn as one) and the transport returns having read a few KiB of it;
// a streamed bomb (one event decoding past the bound) is the stream past
// the bound: a 502 of type response_too_large. Before, the bomb passed
// through encoded and unguarded, and the stream became an empty answer.
func TestDecompressionBombThroughTheTransport(t *testing.T) {
	log := captureLog(t)
	c, cs := wireCases(t)[0], wireCases(t)[1] // openai-chat sync and stream
	for _, tc := range []struct {
		c    wireCase
		ct   string
		bomb []byte
	}{
		{c, "application/json", gzipBomb(t, nil, 1024)},
		{cs, "text/event-stream", gzipBomb(t, []byte("data: "), 1024)},
	} {
		t.Run(tc.c.name, func(t *testing.T) {
			srv := rawUpstream(t, tc.ct, "gzip", tc.bomb)
			var n atomic.Int64
			req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.c.url, bytes.NewReader(tc.c.body))
			req.Header.Set(acceptEncoding[0], acceptEncoding[1])
			resp, err := New(countingTransport{&n}, ToolArgValidation()).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			read := n.Load()
			defer resp.Body.Close()
			t.Logf("%s: a %d-byte bomb, %d bytes of it read when RoundTrip returned", tc.c.name, len(tc.bomb), read)
			if read > int64(len(tc.bomb))/16 {
				t.Errorf("the transport read %d of the bomb's %d bytes before answering, want what decodes to the bound", read, len(tc.bomb))
			}
			if enc := resp.Header.Get("Content-Encoding"); enc != "" {
				t.Errorf("the client's answer says Content-Encoding %q, want none", enc)
			}
			if !tc.c.stream {
				if out := log.String(); !strings.Contains(out, "response body is larger than MaxBody") {
					t.Errorf("the bomb was not reported as a body past the bound; log:\n%s", out)
				}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			if typ, _ := errorType(t, tc.c.w, b); resp.StatusCode != http.StatusBadGateway || typ != responseTooLarge {
				t.Errorf("the client got %d, %.200s; want 502, %s", resp.StatusCode, b, responseTooLarge)
			}
		})
	}
}
