//go:build unix

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"syscall"
	"testing"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// SIGHUP makes the running process re-read -tls-cert and -tls-key, with
// -auth-keys's file, in one handler: a new connection is served the new
// certificate (its serial), a connection made before the signal keeps
// the one it was made with and goes on serving; a mismatched pair sent
// next keeps the certificate in force, the log naming the flag and never
// the key, and the process serves through all of it.
func TestProcessSIGHUPReloadsTLS(t *testing.T) {
	t.Parallel()
	up := fp.New()
	defer up.Close()
	first, second, third := newTestCert(t, 1001), newTestCert(t, 1002), newTestCert(t, 1003)
	// The proxy reads the pair from files of its own, which the test
	// rewrites as an operator renewing the certificate would.
	live := newTestCert(t, 1)
	writeFile(t, live.certFile, first.certPEM)
	writeFile(t, live.keyFile, first.keyPEM)
	keys := writeKeys(t, keyFile)
	p := startProcessEnv(t, []string{providerEnv + "=" + providerKey},
		"-upstream", up.URL, "-tls-cert", live.certFile, "-tls-key", live.keyFile,
		"-auth-keys", keys, "-upstream-key-env", providerEnv, "-log-level", "debug")
	url := "https://" + p.addr + "/healthz"

	// get asks for /healthz with c and returns the served certificate's
	// serial and whether the connection was one made before.
	get := func(c *http.Client) (string, bool) {
		t.Helper()
		var reused bool
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
		})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // read to its end, so the connection is kept
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
		return serial(resp), reused
	}
	hup := func(waitFor string) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		p.waitStderr(t, waitFor)
	}
	trusting := func() *http.Client { return tlsClient(first.cert, second.cert, third.cert) }

	before := trusting()
	s, _ := get(before)
	t.Logf("before SIGHUP: serial %s", s)
	if s != "1001" {
		t.Fatalf("before SIGHUP the proxy served serial %s, want 1001", s)
	}

	writeFile(t, live.certFile, second.certPEM)
	writeFile(t, live.keyFile, second.keyPEM)
	writeFile(t, keys, []byte("tg-tenant-C-key-0004 C\n"))
	hup(`"msg":"toolguard-proxy: the TLS certificate was reloaded"`)
	p.waitStderr(t, `"msg":"toolguard-proxy: the key file was reloaded"`)
	s, reused := get(before)
	t.Logf("after SIGHUP, the connection made before: serial %s, reused %v", s, reused)
	if s != "1001" || !reused {
		t.Errorf("after SIGHUP the connection made before: serial %s, reused %v; want 1001 on the same connection", s, reused)
	}
	s, reused = get(trusting())
	t.Logf("after SIGHUP, a new connection: serial %s, reused %v", s, reused)
	if s != "1002" || reused {
		t.Errorf("after SIGHUP a new connection: serial %s, reused %v; want 1002 on a new connection", s, reused)
	}

	// Renewed halfway: the third certificate with the second's key.
	writeFile(t, live.certFile, third.certPEM)
	hup(`"msg":"toolguard-proxy: the TLS certificate was not reloaded: the one loaded before stays"`)
	s, _ = get(trusting())
	t.Logf("after SIGHUP with a mismatched pair, a new connection: serial %s", s)
	if s != "1002" {
		t.Errorf("after SIGHUP with a mismatched pair a new connection got serial %s, want 1002, the pair in force", s)
	}

	logs := p.stderr.String()
	for line := range strings.Lines(logs) {
		if strings.Contains(line, "certificate was") {
			t.Logf("%s", strings.TrimSpace(line))
		}
	}
	if want := `"error":"-tls-key ` + live.keyFile + `: tls: private key does not match public key (the key of -tls-cert ` + live.certFile + `)"`; !strings.Contains(logs, want) {
		t.Errorf("the refused reload does not say %s:\n%s", want, logs)
	}
	if !strings.Contains(logs, `"serial":"03EA"`) { // 1002, as openssl x509 -serial prints it
		t.Errorf("the reload's log line does not name the new serial 03EA:\n%s", logs)
	}
	for _, pem := range [][]byte{first.keyPEM, second.keyPEM} {
		if strings.Contains(logs, "PRIVATE KEY") || strings.Contains(logs, string(pem[40:80])) {
			t.Errorf("the logs hold key material:\n%s", logs)
		}
	}
}
