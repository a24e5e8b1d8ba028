package retry

import (
	"net/http"
	"time"
)

// HTTPClient returns a client that makes requests as base does and records
// the retry hint of each failed response ("retry-after-ms", "Retry-After")
// in the [HeaderHint] of the request's context, if any. Give it to a
// provider client so that middleware.ModelRetry waits what the server asked:
//
//	llm, err := openai.New(openai.WithHTTPClient(retry.HTTPClient(nil)))
//	llm, err := anthropic.New(anthropic.WithHTTPClient(retry.HTTPClient(nil)))
//
// langchaingo's OpenAI and Anthropic clients drop response headers (and the
// OpenAI client replaces a transport's error with "network error: failed to
// reach API server"), so the returned client changes nothing they see: every
// response and error is passed on unchanged, and the hint is recorded on the
// side. Requests whose context carries no HeaderHint are only passed on.
//
// base is copied, not modified; its Transport (http.DefaultTransport when
// nil) makes the requests. A nil base stands for a client like
// http.DefaultClient: no timeout, so bound calls with a context deadline.
// A base made by HTTPClient is copied without wrapping its transport again.
func HTTPClient(base *http.Client) *http.Client {
	c := new(http.Client)
	if base != nil {
		*c = *base
	}
	if _, ok := c.Transport.(*hintTransport); ok {
		return c
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	c.Transport = &hintTransport{base: rt}
	return c
}

// hintTransport records the retry hints of the responses base returns.
type hintTransport struct {
	base http.RoundTripper
}

// RoundTrip makes the request with the base transport and records the
// response's hint in the request context's HeaderHint.
func (t *hintTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp == nil || !retryableStatus(resp.StatusCode) {
		return resp, err
	}
	if h := headerHintFrom(req.Context()); h != nil {
		h.record(headerWait(resp.Header, time.Now()))
	}
	return resp, nil
}

// CloseIdleConnections closes the base transport's idle connections, when
// it has that method, so that (*http.Client).CloseIdleConnections works.
func (t *hintTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
