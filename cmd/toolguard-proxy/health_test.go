package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// get returns the status and body of a GET of url, failing the test when
// no answer comes within a minute.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	return getWith(t, url)
}

// getWith is get with headers (key, value pairs).
func getWith(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// With -admin-listen, /metrics, /healthz and /readyz are served on the
// admin port and no longer on the traffic port, where those paths are
// proxied like any other; the admin port proxies nothing.
func TestAdminListen(t *testing.T) {
	t.Parallel()
	up := fp.New()
	defer up.Close()
	p := startProxy(t, up.URL, "-admin-listen", "127.0.0.1:0")
	if code, body := get(t, p.Admin+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("admin /healthz: %d %q, want 200 ok", code, body)
	}
	if code, body := get(t, p.Admin+"/readyz"); code != 200 || body != "ok\n" {
		t.Errorf("admin /readyz: %d %q, want 200 ok", code, body)
	}
	if code, body := get(t, p.Admin+"/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("admin /metrics: %d, want 200 and the exposition:\n%s", code, body)
	}
	if code, _ := get(t, p.Admin+"/v1/models"); code != http.StatusNotFound {
		t.Errorf("admin /v1/models: %d, want 404: the admin port proxies nothing", code)
	}
	if n := len(up.Requests()); n != 0 {
		t.Fatalf("the upstream received %d requests from the admin port", n)
	}
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		code, body := get(t, p.URL+path)
		if code != http.StatusNotFound || !strings.Contains(body, "fakeprovider: no protocol at GET "+path) {
			t.Errorf("traffic port %s: %d %q; want the upstream's answer", path, code, body)
		}
	}
	if n := len(up.Requests()); n != 3 {
		t.Errorf("the upstream received %d requests, want the 3 of the traffic port", n)
	}
}

// Without -admin-listen the endpoints stay on the traffic port, /readyz
// beside /healthz and /metrics.
func TestEndpointsOnTrafficPort(t *testing.T) {
	t.Parallel()
	up := fp.New()
	defer up.Close()
	p := startProxy(t, up.URL)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, p.URL+path); code != 200 || body != "ok\n" {
			t.Errorf("%s: %d %q, want 200 ok", path, code, body)
		}
	}
	if code, body := get(t, p.URL+"/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics: %d, want the exposition", code)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("the upstream received %d requests, want none", n)
	}
}

// /readyz is 503 while the proxy drains after SIGTERM (its context done)
// and a request is still in flight, while /healthz stays 200: the admin
// port outlives the traffic port's listener.
func TestReadyzWhileDraining(t *testing.T) {
	t.Parallel()
	inFlight, release := make(chan struct{}), make(chan struct{})
	up := fp.New(fp.Handle(func(w http.ResponseWriter, r *http.Request) {
		close(inFlight)
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hi."},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	p := startProxy(t, up.URL, "-admin-listen", "127.0.0.1:0")
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Post(p.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	<-inFlight
	if code, body := get(t, p.Admin+"/readyz"); code != 200 {
		t.Errorf("/readyz before SIGTERM: %d %q, want 200", code, body)
	}
	p.cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get(t, p.Admin+"/readyz")
		if code == http.StatusServiceUnavailable {
			t.Logf("/readyz while draining: %d %s", code, body)
			if body != "not ready: draining (shutting down)\n" {
				t.Errorf("/readyz while draining: body %q", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %q 10s after SIGTERM", code, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, body := get(t, p.Admin+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz while draining: %d %q, want 200 ok", code, body)
	}
	close(release)
	if code := <-answered; code != 200 {
		t.Errorf("the request in flight got %d, want 200", code)
	}
}

// /readyz follows a real redis-server through an outage: 200 before, 503
// while it is stopped and while it is frozen (SIGSTOP: it keeps its port
// and answers nothing; the probe does not wait for the client's read
// timeout), 200 once it is back; /healthz stays 200 throughout. No answer
// names the server's address.
func TestReadyzRedisOutage(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	up := fp.New()
	defer up.Close()
	// A read timeout longer than get's: a probe that waited for the
	// client's reads on a frozen server would not be answered.
	p := startProxy(t, up.URL, "-admin-listen", "127.0.0.1:0", "-thread-limit", "5", "-redis", "redis://"+srv.Addr()+"/0?read_timeout=5m")
	probe := func(when string, want int) {
		t.Helper()
		code, body := get(t, p.Admin+"/readyz")
		t.Logf("/readyz %s: %d %s", when, code, strings.TrimSpace(body))
		if code != want {
			t.Errorf("/readyz %s: %d %q, want %d", when, code, body, want)
		}
		if strings.Contains(body, srv.Addr()) || strings.Contains(body, "127.0.0.1") {
			t.Errorf("/readyz %s names the address: %q", when, body)
		}
		if code, _ := get(t, p.Admin+"/healthz"); code != 200 {
			t.Errorf("/healthz %s: %d, want 200 (liveness only)", when, code)
		}
	}
	probe("before the outage", 200)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	probe("while redis is stopped", 503)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	probe("after redis is back", 200)
	if err := srv.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Thaw() })
	probe("while redis is frozen", 503)
	if err := srv.Thaw(); err != nil {
		t.Fatal(err)
	}
	probe("after redis is thawed", 200)
	if lines := p.logLines(t, "toolguard-proxy: not ready: redis does not answer"); len(lines) != 2 {
		t.Errorf("%d log lines say redis does not answer, want 2 (stopped, frozen)", len(lines))
	}
}
