package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// testCert is a self-signed server certificate for 127.0.0.1, written as
// PEM files of the test's own.
type testCert struct {
	cert              *x509.Certificate
	certFile, keyFile string
	certPEM, keyPEM   []byte
}

// newTestCert makes a self-signed certificate for 127.0.0.1 with serial,
// and writes it and its key to a directory of the test's.
func newTestCert(t *testing.T, serial int64) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "toolguard-proxy test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	tc := testCert{
		cert:    cert,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	dir := t.TempDir()
	tc.certFile, tc.keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, tc.certFile, tc.certPEM)
	writeFile(t, tc.keyFile, tc.keyPEM)
	return tc
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsClient is a client that trusts roots only, and would speak HTTP/2
// if the server offered it.
func tlsClient(roots ...*x509.Certificate) *http.Client {
	pool := x509.NewCertPool()
	for _, c := range roots {
		pool.AddCert(c)
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
	}}
}

// postWith posts body to url with c and returns the response with its
// body read.
func postWith(t *testing.T, c *http.Client, url, body string) (*http.Response, []byte, error) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// serial is the serial number of the certificate resp's server presented.
func serial(resp *http.Response) string {
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return "none (not TLS)"
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.String()
}

// With -tls-cert and -tls-key the proxy serves HTTPS on -listen: a client
// trusting the certificate gets its answer through the proxy, sync and
// streamed, guarded (the invalid call re-asked) over HTTP/1.1, as on plain
// -listen; a client that does not trust it fails its handshake; a client
// speaking plain HTTP to the port is answered 400 by the TLS server, and
// none of those reach the upstream. -admin-listen stays plain HTTP.
func TestTLSServesHTTPS(t *testing.T) {
	t.Parallel()
	up := fp.New(
		fp.Reply(fp.Call("get_weather", `{"city": 42}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
		fp.Reply(fp.Text("Sunny.")),
	)
	defer up.Close()
	tc := newTestCert(t, 4201)
	p := startProxy(t, up.URL, "-tls-cert", tc.certFile, "-tls-key", tc.keyFile, "-admin-listen", "127.0.0.1:0")
	url := strings.Replace(p.URL, "http://", "https://", 1) + "/v1/chat/completions"

	resp, body, err := postWith(t, tlsClient(tc.cert), url, chatBody)
	if err != nil {
		t.Fatalf("POST %s with a client trusting the certificate: %v", url, err)
	}
	t.Logf("client trusting the certificate: %s %d, certificate serial %s: %s", resp.Proto, resp.StatusCode, serial(resp), bytes.TrimSpace(body))
	if resp.StatusCode != http.StatusOK || serial(resp) != "4201" || resp.Proto != "HTTP/1.1" {
		t.Errorf("status %d, serial %s, protocol %s; want 200, 4201, HTTP/1.1", resp.StatusCode, serial(resp), resp.Proto)
	}
	if c := decodeChat(t, body).Choices[0].Message.ToolCalls; len(c) != 1 || c[0].Function.Arguments != `{"city": "Paris"}` {
		t.Errorf("the client read the calls %+v, want the re-asked call", c)
	}
	resp, body, err = postWith(t, tlsClient(tc.cert), url, streamBody)
	if err != nil {
		t.Fatalf("streamed POST: %v", err)
	}
	if s := readChatStream(t, bytes.NewReader(body)); resp.StatusCode != http.StatusOK || s.Text != "Sunny." || !s.Done {
		t.Errorf("streamed: status %d, text %q, [DONE] %v; want 200, Sunny., true", resp.StatusCode, s.Text, s.Done)
	}

	other := newTestCert(t, 99)
	if _, _, err := postWith(t, tlsClient(other.cert), url, chatBody); err == nil {
		t.Error("a client that does not trust the certificate was served")
	} else {
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Errorf("a client that does not trust the certificate: %v, want x509.UnknownAuthorityError", err)
		}
	}

	plain := "http://" + strings.TrimPrefix(p.URL, "http://") + "/v1/chat/completions"
	resp, body, err = postWith(t, http.DefaultClient, plain, chatBody)
	if err != nil {
		t.Fatalf("plain POST: %v", err)
	}
	t.Logf("plain-HTTP client: %s %d %q", resp.Proto, resp.StatusCode, body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "HTTPS") {
		t.Errorf("a plain-HTTP client got %d %q, want 400 saying HTTPS", resp.StatusCode, body)
	}
	// The admin port stays plain HTTP: probes and scrapers on the
	// operator's network.
	resp, err = http.Get(p.Admin + "/readyz")
	if err != nil {
		t.Fatalf("GET %s/readyz: %v", p.Admin, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("plain GET /readyz on -admin-listen: %d, want 200", resp.StatusCode)
	}
	if n := len(up.Requests()); n != 3 {
		t.Errorf("the upstream received %d requests, want 3: the two attempts of the sync request and the stream", n)
	}
}

// -tls-cert and -tls-key are given both or neither, and a pair that cannot
// be read, does not parse or does not match stops the proxy before it
// starts, with one line naming the flag (the variable when the
// environment set it) and never any key material.
func TestBadTLSFlags(t *testing.T) {
	t.Parallel()
	a, b := newTestCert(t, 1), newTestCert(t, 2)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	writeFile(t, garbage, []byte("not PEM\n"))
	keyAsCert := filepath.Join(dir, "key-as-cert.pem")
	writeFile(t, keyAsCert, a.keyPEM)
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"cert without key", []string{"-tls-cert", a.certFile}, nil, "-tls-cert needs -tls-key"},
		{"key without cert", []string{"-tls-key", a.keyFile}, nil, "-tls-key needs -tls-cert"},
		{"cert from the environment without key", nil, map[string]string{"TOOLGUARD_TLS_CERT": a.certFile}, "TOOLGUARD_TLS_CERT needs -tls-key"},
		{"missing cert", []string{"-tls-cert", missing, "-tls-key", a.keyFile}, nil, "-tls-cert " + missing + ": no such file or directory"},
		{"missing key", []string{"-tls-cert", a.certFile, "-tls-key", missing}, nil, "-tls-key " + missing + ": no such file or directory"},
		{"cert not PEM", []string{"-tls-cert", garbage, "-tls-key", a.keyFile}, nil, "-tls-cert " + garbage + ": no PEM CERTIFICATE block"},
		{"a key as the cert", []string{"-tls-cert", keyAsCert, "-tls-key", a.keyFile}, nil, "-tls-cert " + keyAsCert + ": no PEM CERTIFICATE block"},
		{"key not PEM", []string{"-tls-cert", a.certFile, "-tls-key", garbage}, nil, "-tls-key " + garbage + ": tls: failed to find any PEM data in key input"},
		{"the cert as the key", []string{"-tls-cert", a.certFile, "-tls-key", a.certFile}, nil, "-tls-key " + a.certFile + ": tls: found a certificate rather than a key"},
		{"mismatched pair", []string{"-tls-cert", a.certFile, "-tls-key", b.keyFile}, nil, "-tls-key " + b.keyFile + ": tls: private key does not match public key (the key of -tls-cert " + a.certFile + ")"},
		{"mismatched pair from the environment", nil, map[string]string{"TOOLGUARD_TLS_CERT": a.certFile, "TOOLGUARD_TLS_KEY": b.keyFile},
			"TOOLGUARD_TLS_KEY " + b.keyFile + ": tls: private key does not match public key (the key of TOOLGUARD_TLS_CERT " + a.certFile + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a proxy that starts in spite of the flags stops at once
			args := append([]string{"-upstream", "https://x", "-listen", "127.0.0.1:0"}, tc.args...)
			err := run(ctx, args, envOf(tc.env, nil), &stdout, &stderr)
			first, _, _ := strings.Cut(stderr.String(), "\n")
			t.Logf("%s", first)
			if !errors.Is(err, errUsage) || !strings.HasPrefix(first, "toolguard-proxy: "+tc.want) {
				t.Errorf("run(%q) = %v, first line %q; want errUsage and a line beginning %q", args, err, first, "toolguard-proxy: "+tc.want)
			}
			if strings.Contains(stderr.String(), "PRIVATE KEY") || bytes.Contains(stderr.Bytes(), a.keyPEM[30:60]) {
				t.Errorf("the error quotes key material:\n%s", stderr.String())
			}
		})
	}
}
