package httpguard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The credentials a request carries never reach a log, an event or a span,
// whatever happens to it: a re-ask, retries, failing closed and open, a
// limit, a provider that quotes the key in its error (as OpenAI's 401
// does), tools on a path the transport does not know. Everything the
// stages, the transport and otelguard (with content capture on) produce is
// rendered and searched for the secrets.
func TestCredentialsNeverRecorded(t *testing.T) {
	const (
		bearer = "sk-proj-SECRETbearer0123456789"
		apiKey = "sk-ant-SECRETapikey0123456789"
		goog   = "AIzaSECRETgoogkey0123456789"
	)
	secrets := []string{bearer, apiKey, goog, "SECRET"}
	log := captureLog(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())
	var seen strings.Builder
	record := func(_ context.Context, e guard.Event) {
		fmt.Fprintf(&seen, "%+v %v\n", e, e.Err)
	}
	// The provider answers 401 quoting the key, then a bad call, then
	// retries, then a bad call again.
	quoted := fmt.Sprintf(`{"error":{"message":"Incorrect API key provided: %s.","type":"invalid_request_error","code":"invalid_api_key"}}`, bearer)
	steps := []fp.Step{
		fp.Raw(401, quoted),
		fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": 42}`)),
		fp.Error(429, "retry-after-ms", "1"),
		fp.Reply(fp.Call("get_weather", `{"city": 43}`)),
		fp.Error(503), fp.Error(503), fp.Error(503),
	}
	noWait := guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })
	for _, c := range wireCases(t) {
		srv := fp.New(steps...)
		tr := New(nil,
			Observe(otelguard.New(otelguard.WithTracerProvider(tp), otelguard.WithCaptureContent())),
			ToolCallLimit(guard.WithRunLimit(5), guard.WithEventHandler(record)),
			ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed(), guard.WithEventHandler(record)),
			ModelRetry(noWait, guard.WithEventHandler(record)))
		hdr := []string{"Authorization", "Bearer " + bearer, "x-api-key", apiKey, "x-goog-api-key", goog}
		for range 3 {
			ex := do(t, tr, context.Background(), srv.URL+c.url, c.body, hdr...)
			fmt.Fprintf(&seen, "%s %d\n", c.name, ex.resp.StatusCode)
		}
		do(t, tr, context.Background(), srv.URL+"/v9/unknown", c.body, hdr...)
		if got := srv.Requests(); len(got) == 0 || got[0].Header.Get("x-api-key") != apiKey || got[0].Header.Get("Authorization") != "Bearer "+bearer {
			t.Fatalf("%s: the provider did not get the credentials", c.name)
		}
		srv.Close()
	}
	// A key in the query (Gemini's ?key=) of a request whose connection
	// fails: the transport's error quotes the URL.
	gone := fp.New()
	gone.Close()
	tr := New(nil, ModelRetry(noWait, guard.WithEventHandler(record)))
	c := wireCases(t)[6] // gemini/sync
	req, _ := http.NewRequest(http.MethodPost, gone.URL+c.url+"?key="+goog, strings.NewReader(string(c.body)))
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "connect") {
		t.Fatalf("RoundTrip to a closed server: %v", err)
	}
	if !strings.Contains(seen.String(), "connection refused") {
		t.Errorf("the connection error is not in the events: %s", seen.String())
	}
	if !strings.Contains(seen.String(), "retry") || !strings.Contains(seen.String(), "invalid") {
		t.Fatalf("the scenario did not run as planned: %s", seen.String())
	}
	var all strings.Builder
	all.WriteString(seen.String())
	all.WriteString(log.String())
	for _, s := range spans.Ended() {
		fmt.Fprintf(&all, "%s %v %v\n", s.Name(), s.Attributes(), s.Status())
		for _, e := range s.Events() {
			fmt.Fprintf(&all, "  %s %v\n", e.Name, e.Attributes)
		}
	}
	if len(spans.Ended()) == 0 || !strings.Contains(log.String(), "misconfigured") {
		t.Fatalf("no spans or no log recorded: %d spans, log %q", len(spans.Ended()), log.String())
	}
	for _, s := range secrets {
		if i := strings.Index(all.String(), s); i >= 0 {
			lo := max(0, i-200)
			t.Errorf("%q recorded: …%s…", s, all.String()[lo:min(len(all.String()), i+100)])
		}
	}
}

// A base transport whose error quotes the URL (one that wraps an
// http.Client returns a *url.Error) has the query's key blanked, and the
// error is still reachable.
func TestRedactURLError(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent?key=AIzaSECRET123456", nil)
	req.Header.Set("Authorization", "Bearer sk-SECRET-abcdef")
	inner := &url.Error{Op: "Post", URL: req.URL.String(), Err: errors.New("connection reset by peer: Bearer sk-SECRET-abcdef")}
	err := redact(inner, credentials(req))
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("redact(...).Error() = %q", err.Error())
	}
	var ue *url.Error
	if !errors.As(err, &ue) || ue != inner {
		t.Errorf("errors.As does not reach the *url.Error")
	}
}
