package httpguard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
)

// The client's SigV4 headers, as the AWS SDK sets them (the signature is
// over the client's body).
var clientSigV4 = []string{
	"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=c1e47",
	"X-Amz-Date", "20260101T000000Z",
	"X-Amz-Security-Token", "client-session-token",
}

// fakeSigner signs with a signature that names the hash of the body it
// was given, and counts its calls.
type fakeSigner struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (s *fakeSigner) sign(_ context.Context, r *http.Request, body []byte) error {
	s.mu.Lock()
	s.bodies = append(s.bodies, bytes.Clone(body))
	s.mu.Unlock()
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if r.Header.Get(h) != "" {
			return &json.UnsupportedValueError{Str: "stale header " + h + " left for the signer"}
		}
	}
	r.Header.Set("X-Amz-Date", "20260101T000001Z")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Signature="+bodyHash(body))
	return nil
}

func bodyHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// A re-ask of a SigV4-signed request goes through the signer, with the
// client's signature removed and the re-ask's own body; the client's
// request goes as it came, not signed again.
func TestSignerSignsTheReask(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"converse", "converse-stream"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			var replies []http.HandlerFunc
			if op == "converse" {
				replies = []http.HandlerFunc{converseJSON(bedrockAnswer("tooluse_bad", `{"city":42}`)), converseJSON(bedrockAnswer("tooluse_good", `{"city":"Paris"}`))}
			} else {
				replies = []http.HandlerFunc{converseStream(bedrockStream("tooluse_bad", `{"city":42}`)), converseStream(bedrockStream("tooluse_good", `{"city":"Paris"}`))}
			}
			srv := newBedrockServer(t, replies...)
			s := &fakeSigner{}
			tr := New(nil, ToolArgValidation(), WithSigner(s.sign))
			ex := do(t, tr, context.Background(), bedrockURL(srv, op), []byte(bedrockRequest), clientSigV4...)
			got := srv.got()
			if len(got) != 2 || ex.resp.StatusCode != http.StatusOK || !bytes.Contains(ex.body, []byte("tooluse_good")) {
				t.Fatalf("%d upstream requests, the client read %d %.160q", len(got), ex.resp.StatusCode, ex.body)
			}
			for i := 0; i < len(clientSigV4); i += 2 {
				if v := got[0].header.Get(clientSigV4[i]); v != clientSigV4[i+1] {
					t.Errorf("the client's request went with %s %q, want %q as the client signed it", clientSigV4[i], v, clientSigV4[i+1])
				}
			}
			if want := "AWS4-HMAC-SHA256 Signature=" + bodyHash(got[1].body); got[1].header.Get("Authorization") != want {
				t.Errorf("the re-ask went with Authorization %q, want a signature over its own body %q", got[1].header.Get("Authorization"), want)
			}
			if v := got[1].header.Get("X-Amz-Security-Token"); v != "" {
				t.Errorf("the re-ask kept the client's stale X-Amz-Security-Token %q", v)
			}
			if len(s.bodies) != 1 || !bytes.Equal(s.bodies[0], got[1].body) {
				t.Errorf("the signer signed %d bodies, want the re-ask's alone", len(s.bodies))
			}
		})
	}
}

// The attack: without a signer, a re-ask of a SigV4-signed request never
// leaves with the client's stale signature (AWS would answer 403, and a
// signature replayed over another body must not be tried at all). The
// call is refused with a 422 signer_missing, failing open as closed, and
// ModelRetry does not send it either; the transport says misconfigured
// once per host and path.
func TestReaskWithoutSignerNeverSentStale(t *testing.T) {
	var logged bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(old)
	zero := ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }))
	for _, tc := range []struct {
		name string
		mws  []Middleware
	}{
		{"fail open", []Middleware{ToolArgValidation(), zero}},
		{"fail closed", []Middleware{ToolArgValidation(guard.WithFailClosed()), zero}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := converseJSON(bedrockAnswer("tooluse_bad", `{"city":42}`))
			srv := newBedrockServer(t, bad, bad, bad, bad)
			before := strings.Count(logged.String(), "misconfigured")
			tr := New(nil, tc.mws...)
			for i := 0; i < 2; i++ {
				ex := do(t, tr, context.Background(), bedrockURL(srv, "converse"), []byte(bedrockRequest), clientSigV4...)
				var body struct {
					Type    string `json:"__type"`
					Message string `json:"message"`
				}
				if err := json.Unmarshal(ex.body, &body); err != nil || ex.resp.StatusCode != http.StatusUnprocessableEntity || body.Type != signerMissing {
					t.Errorf("the client read %d %s, want a 422 of __type %s", ex.resp.StatusCode, ex.body, signerMissing)
				}
			}
			for i, r := range srv.got() {
				if !bytes.Equal(r.body, []byte(bedrockRequest)) {
					t.Errorf("upstream request %d carries a body the client did not sign, with the client's signature %q:\n%s", i, r.header.Get("Authorization"), r.body)
				}
			}
			if n := len(srv.got()); n != 2 {
				t.Errorf("%d upstream requests, want the client's two", n)
			}
			if n := strings.Count(logged.String(), "misconfigured") - before; n != 1 {
				t.Errorf("misconfigured logged %d times for two calls, want once per host and path:\n%s", n, logged.String())
			}
		})
	}
}

// Streamed, the refusal comes after the first attempt's text reached the
// client: the client's stream ends with an exception signer_missing, and
// nothing more reaches the server.
func TestReaskWithoutSignerStreamed(t *testing.T) {
	t.Parallel()
	srv := newBedrockServer(t, converseStream(bedrockStream("tooluse_bad", `{"city":42}`)), converseStream(bedrockStream("tooluse_good", `{"city":"Paris"}`)))
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), bedrockURL(srv, "converse-stream"), []byte(bedrockRequest), clientSigV4...)
	evs := readClientStream(t, ex.body)
	if last := evs[len(evs)-1]; last.Event != exceptionPrefix+signerMissing || !bytes.Contains(ex.body, []byte("check.")) {
		t.Errorf("the client read %s last, want the text then an exception %s", last.Event, signerMissing)
	}
	if n := len(srv.got()); n != 1 {
		t.Errorf("%d upstream requests, want the client's alone", n)
	}
}

// A request the client did not sign with SigV4 (a Bedrock API key, a
// bearer token) is re-asked with its headers as they came, no signer
// needed.
func TestUnsignedRequestNeedsNoSigner(t *testing.T) {
	t.Parallel()
	srv := newBedrockServer(t, converseJSON(bedrockAnswer("tooluse_bad", `{"city":42}`)), converseJSON(bedrockAnswer("tooluse_good", `{"city":"Paris"}`)))
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), bedrockURL(srv, "converse"), []byte(bedrockRequest),
		"Authorization", "Bearer ABSKbedrockapikey")
	got := srv.got()
	if len(got) != 2 || ex.resp.StatusCode != http.StatusOK {
		t.Fatalf("%d upstream requests, the client read %d, want 2 and 200", len(got), ex.resp.StatusCode)
	}
	if a := got[1].header.Get("Authorization"); a != "Bearer ABSKbedrockapikey" {
		t.Errorf("the re-ask's Authorization %q, want the client's", a)
	}
}

func TestWithSignerNilPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "WithSigner(nil)") {
			t.Errorf("WithSigner(nil) recovered %v, want a panic naming it", r)
		}
	}()
	WithSigner(nil)
}

// presigned is what sigV4 asked of every request before: whether
// url.URL.Query has X-Amz-Signature.
func FuzzPresigned(f *testing.F) {
	for _, q := range []string{"", "alt=sse", "key=AIza", "X-Amz-Signature=1", "x-amz-signature=1", "X-Amz-Signatur%65=1",
		"X-Amz-Signature", "a=1&X-Amz-Signature=", "a=1;X-Amz-Signature=1", "X-Amz-Signature%3D1", "X%2DAmz-Signature=1",
		"X-Amz-Signature=%zz", "%", "a=%&X-Amz-Signature=1", "Signature=1", "X-Amz-Signature+=1", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=c1e47"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query string) {
		want := (&url.URL{RawQuery: query}).Query().Has("X-Amz-Signature")
		if got := presigned(query); got != want {
			t.Errorf("presigned(%q) = %v, url.URL.Query's %v", query, got, want)
		}
	})
}
