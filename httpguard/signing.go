package httpguard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

// SignFunc signs r, an upstream request whose body the guard changed, for
// body, its payload: it sets r's signature headers as the client's SDK
// would have (with AWS SigV4, Authorization and X-Amz-Date, and
// X-Amz-Security-Token for temporary credentials). The transport has
// already removed the client's signature from r (Authorization,
// X-Amz-Date, X-Amz-Security-Token, a presigned URL's X-Amz-* query
// parameters) and set X-Amz-Content-Sha256 to body's hash where the client
// sent one; every other header is the client's, and r's body and
// ContentLength are body's. It is called on the logical call's goroutine,
// once per upstream request that needs it, and concurrently across calls.
// An error ends the call with that error, the request unsent.
type SignFunc func(ctx context.Context, r *http.Request, body []byte) error

// WithSigner returns an option for [New] that signs again every upstream
// request whose body the guard changed from what the client signed:
// Amazon Bedrock's requests (and any other the client signed with AWS
// Signature Version 4) carry a signature over their body, so a re-ask
// (the client's body with the answer and the tool results appended) or a
// history [HistoryCheck] repaired is refused by AWS unless it is signed
// again, with the program's own credentials. The client's own request,
// forwarded unchanged (a ModelRetry of it included), is never signed
// again, and requests the client did not sign with SigV4 (an API key or a
// bearer token, Bedrock's API keys among them) never go through sign.
//
// It is given to New with the stages but is not one: where it sits in the
// list does not matter, and it changes nothing of what the stages do. It
// is an option of New because New's Middlewares are how a Transport is
// configured; a hook on the request's context would have to be set on
// every call, and a field on Transport set after New would race with its
// first requests. sign must not be nil: WithSigner panics otherwise.
//
// Without a signer, the transport never sends a SigV4-signed request with
// a body it changed (AWS would refuse it with a 403, and a stale signature
// must not look like the provider's refusal): the logical call ends with a
// 422 of type signer_missing in the protocol's shape (an exception event
// when its stream has begun), whatever the stages' fail-open or
// fail-closed setting, and the transport logs misconfigured at Warn on
// slog.Default, once per host and path. Requests whose answers need no
// re-ask pass as ever. See the package documentation, "Amazon Bedrock and
// request signing".
//
// With aws-sdk-go-v2's signer and the program's credentials (a
// config.LoadDefaultConfig's aws.Config), for Bedrock Runtime, whose
// signing name is "bedrock":
//
//	cfg, _ := config.LoadDefaultConfig(ctx)
//	signer := v4.NewSigner()
//	sign := httpguard.WithSigner(func(ctx context.Context, r *http.Request, body []byte) error {
//		creds, err := cfg.Credentials.Retrieve(ctx)
//		if err != nil {
//			return err
//		}
//		sum := sha256.Sum256(body)
//		return signer.SignHTTP(ctx, creds, r, hex.EncodeToString(sum[:]), "bedrock", cfg.Region, time.Now())
//	})
//	client := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
//		o.HTTPClient = &http.Client{Transport: httpguard.New(nil, sign, httpguard.ToolArgValidation())}
//	})
func WithSigner(sign SignFunc) Middleware {
	if sign == nil {
		panic("httpguard: WithSigner(nil): a signer is required")
	}
	return Middleware{func(next guard.Handler[*request, *response]) guard.Handler[*request, *response] {
		return func(ctx context.Context, req *request) (*response, error) {
			return next(context.WithValue(ctx, signerKey{}, sign), req)
		}
	}}
}

// ErrSignerMissing is the error of a logical call whose request the client
// signed with AWS SigV4 and whose body the guard changed (a re-ask, a
// repaired history), made by a Transport without [WithSigner]: the request
// is not sent. The client reads it as a 422 of type signer_missing.
var ErrSignerMissing = errors.New("httpguard: the request is signed with AWS SigV4 and the guard changed its body (a re-ask or a repaired history), but the Transport has no signer (httpguard.WithSigner): it was not sent with a stale signature")

// signerMissing is the error type a client reads for ErrSignerMissing.
const signerMissing = "signer_missing"

type (
	signerKey     struct{}
	signedBodyKey struct{}
)

// signedContext returns ctx, which carries the body req's client signed
// when it signed it with SigV4, for the upstream requests to compare
// theirs with.
func signedContext(ctx context.Context, req *request) context.Context {
	if !sigV4(req.http) {
		return ctx
	}
	return context.WithValue(ctx, signedBodyKey{}, req.body)
}

// sigV4 reports whether r carries an AWS Signature Version 4: in its
// Authorization header (AWS4-HMAC-SHA256, or SigV4a's AWS4-ECDSA-P256-SHA256)
// or, presigned, in its query.
func sigV4(r *http.Request) bool {
	for _, v := range r.Header.Values("Authorization") {
		if strings.HasPrefix(strings.TrimSpace(v), "AWS4-") {
			return true
		}
	}
	return presigned(r.URL.RawQuery)
}

// presigned reports whether query, a URL's raw query, has an
// X-Amz-Signature parameter. A query that holds neither the name nor an
// escape (which an escaped name needs) is not parsed: nearly every
// request's, which has none or ?alt=sse or ?key=.
func presigned(query string) bool {
	if !strings.Contains(query, "Signature") && !strings.Contains(query, "%") {
		return false
	}
	q, _ := url.ParseQuery(query)
	return q.Has("X-Amz-Signature")
}

// signAgain signs out, an upstream request with body, again when its
// client signed it with SigV4 for another body: with ctx's signer, else
// ErrSignerMissing (reported once per host and path).
func (t *Transport) signAgain(ctx context.Context, req *request, out *http.Request, body []byte) error {
	signed, ok := ctx.Value(signedBodyKey{}).([]byte)
	if !ok || bytes.Equal(signed, body) {
		return nil
	}
	sign, _ := ctx.Value(signerKey{}).(SignFunc)
	if sign == nil {
		t.report(req.http, "misconfigured", signerMissingText, nil)
		return ErrSignerMissing
	}
	// out shares the client's headers and URL (sendUpstream): this request's
	// own are written.
	out.Header, out.URL = out.Header.Clone(), cloneURL(out.URL)
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		out.Header.Del(h)
	}
	if out.Header.Get("X-Amz-Content-Sha256") != "" {
		sum := sha256.Sum256(body)
		out.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	}
	if q := out.URL.Query(); q.Has("X-Amz-Signature") {
		for _, k := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
			"X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token"} {
			q.Del(k)
		}
		out.URL.RawQuery = q.Encode()
	}
	if err := sign(ctx, out, body); err != nil {
		return fmt.Errorf("httpguard: signing the upstream request: %w", err)
	}
	return nil
}

// cloneURL returns a copy of u that shares nothing a write to it changes,
// as http.Request.Clone copies a request's URL.
func cloneURL(u *url.URL) *url.URL {
	if u == nil {
		return nil
	}
	out := *u
	if u.User != nil {
		user := *u.User
		out.User = &user
	}
	return &out
}

const signerMissingText = "a request signed with AWS SigV4 needs its body changed (a re-ask, a repaired history) and the Transport has no signer (httpguard.WithSigner): the call is refused"
