package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
)

// quietErrors is the upstream transport whose errors, those of a request
// and those of reading a response's body, say what kind of failure it was
// (connection refused, timeout, TLS, …) and nothing else. The Go errors
// quote the upstream's address and host name ("dial tcp 10.0.3.7:443:
// connect: connection refused"), and httpguard writes an error's text into
// the client's stream when an upstream request fails after the stream
// began (a re-ask): no internal address reaches a client. The error keeps
// its cause (Unwrap), so that ModelRetry classifies it as before and the
// proxy's log still names it.
type quietErrors struct{ base http.RoundTripper }

func (t quietErrors) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, quiet(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols { // its body is the connection: ReverseProxy writes to it
		resp.Body = quietBody{resp.Body}
	}
	return resp, nil
}

// quietBody is an upstream response's body whose read errors are quiet.
type quietBody struct{ io.ReadCloser }

func (b quietBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = quiet(err)
	}
	return n, err
}

// upstreamFailure is an upstream connection's error, said by its kind.
type upstreamFailure struct {
	kind string // fixed text: "connection refused", "timeout", …
	err  error
}

func (e *upstreamFailure) Error() string {
	return "toolguard-proxy: the upstream connection failed: " + e.kind
}

func (e *upstreamFailure) Unwrap() error { return e.err }

// quiet returns err as an *upstreamFailure, except a cancelled context's
// (the client went away) and an error already quiet.
func quiet(err error) error {
	var uf *upstreamFailure
	if errors.Is(err, context.Canceled) || errors.As(err, &uf) {
		return err
	}
	return &upstreamFailure{kind: failureKind(err), err: err}
}

// failureKind names the kind of a connection's failure.
func failureKind(err error) string {
	var (
		dns    *net.DNSError
		cert   *tls.CertificateVerificationError
		header tls.RecordHeaderError
		alert  tls.AlertError
		ne     net.Error
	)
	switch {
	case errors.As(err, &dns):
		return "DNS lookup failed"
	case errors.As(err, &cert), errors.As(err, &header), errors.As(err, &alert):
		return "TLS failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	}
	return "connection error"
}
