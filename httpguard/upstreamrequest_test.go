package httpguard

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// recordingBase answers each upstream request with the next of its
// answers and keeps the request itself, as the base received it.
type recordingBase struct {
	answers []string
	got     []*http.Request
}

func (b *recordingBase) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	body := b.answers[len(b.got)]
	b.got = append(b.got, r)
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: r}, nil
}

// The upstream requests share the client's headers and URL until one is
// written: a re-ask signed again (its signature headers, its presigned
// query) writes its own copy. Neither the client's request nor the
// first upstream request, sent as the client signed it, changes, however
// the re-ask is signed.
func TestUpstreamRequestsLeaveTheClientsUntouched(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, query string
		header      []string
	}{
		{"signed header", "", clientSigV4},
		{"presigned URL", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20260101&X-Amz-Signature=c1e47&other=1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := &recordingBase{answers: []string{bedrockAnswer("tooluse_bad", `{"city":42}`), bedrockAnswer("tooluse_good", `{"city":"Paris"}`)}}
			sign := func(_ context.Context, r *http.Request, body []byte) error {
				r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Signature="+bodyHash(body))
				r.Header.Add("X-Client", "added by the signer")
				q := r.URL.Query()
				q.Set("X-Amz-Signature", bodyHash(body))
				r.URL.RawQuery = q.Encode()
				r.URL.User = url.User("signer")
				return nil
			}
			tr := New(base, ToolArgValidation(), WithSigner(sign))
			u := "http://bedrock.test/model/m/converse"
			if tc.query != "" {
				u += "?" + tc.query
			}
			r, err := http.NewRequest(http.MethodPost, u, strings.NewReader(bedrockRequest))
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-Client", "client")
			for i := 0; i < len(tc.header); i += 2 {
				r.Header.Set(tc.header[i], tc.header[i+1])
			}
			header, urlBefore, userBefore := r.Header.Clone(), r.URL.String(), r.URL.User
			resp, err := tr.RoundTrip(r)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if len(base.got) != 2 || !bytes.Contains(b, []byte("tooluse_good")) {
				t.Fatalf("%d upstream requests, the client read %.160q", len(base.got), b)
			}
			if !reflect.DeepEqual(r.Header, header) || r.URL.String() != urlBefore || r.URL.User != userBefore {
				t.Errorf("the client's request changed: %v %s, was %v %s", r.Header, r.URL, header, urlBefore)
			}
			first, reask := base.got[0], base.got[1]
			if !reflect.DeepEqual(first.Header, header) || first.URL.String() != urlBefore {
				t.Errorf("the first upstream request changed after it was sent: %v %s, was %v %s", first.Header, first.URL, header, urlBefore)
			}
			if reask.Header.Get("Authorization") == header.Get("Authorization") || len(reask.Header.Values("X-Client")) != 2 ||
				(tc.query != "" && reask.URL.Query().Get("X-Amz-Signature") == "c1e47") {
				t.Errorf("the re-ask was not signed: %v %s", reask.Header, reask.URL)
			}
			if resp.Request != r {
				t.Errorf("the response's Request is %p, want the client's %p", resp.Request, r)
			}
		})
	}
}

// A sync answer reaches the client with the upstream's headers as they
// came (several values, cookies, the provider's ids) and the length of
// the body the client reads: the upstream's when the guard changed
// nothing, the cleaned body's when it wrote cleaned arguments.
func TestSyncAnswerHeader(t *testing.T) {
	t.Parallel()
	const request = `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather?"}],"tools":[{"type":"function","function":` +
		`{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}}}]}`
	answer := func(args string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
			`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":` + strconv.Quote(args) + `}}]},"finish_reason":"tool_calls"}]}`
	}
	for _, tc := range []struct{ name, args, wantArgs string }{
		{"unchanged", `{"city":"Paris"}`, `{"city":"Paris"}`},
		{"cleaned", `{"city":"Paris","unit":null}`, `{"city":"Paris"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := answer(tc.args)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header()["Date"] = nil // not sent: the two answers are read at different times
				w.Header().Set("X-Request-Id", "req_1")
				w.Header().Add("Set-Cookie", "a=1")
				w.Header().Add("Set-Cookie", "b=2")
				io.WriteString(w, body)
			}))
			defer srv.Close()
			get := func(rt http.RoundTripper) (*http.Response, []byte) {
				r, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(request))
				resp, err := (&http.Client{Transport: rt}).Do(r)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp, b
			}
			direct, _ := get(http.DefaultTransport)
			guarded, b := get(New(nil, ToolArgValidation()))
			if want := answer(tc.wantArgs); string(b) != want {
				t.Fatalf("the client read %s, want %s", b, want)
			}
			want := direct.Header.Clone()
			want.Set("Content-Length", strconv.Itoa(len(b)))
			if !reflect.DeepEqual(guarded.Header, want) || guarded.ContentLength != int64(len(b)) {
				t.Errorf("the client's header %v (length %d), want %v (%d)", guarded.Header, guarded.ContentLength, want, len(b))
			}
		})
	}
}
