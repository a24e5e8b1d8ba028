package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// heldStacksEnv names the proxy a child of TestHeldStreamStacks holds
// streams through: "plain" or "guarded".
const heldStacksEnv = "TOOLGUARD_TEST_HELD_STACKS"

// A stream held in flight through the proxy costs the goroutine stacks of
// the same stream through a plain httputil.ReverseProxy and the logical
// call's goroutine (8 KiB): no more. The connection's goroutine waits for
// the answer under every handler's frame, and goes deeper once, as the
// answer's header is written: with the handlers' frames of old it grew to
// 16 KiB there, and held that for as long as the stream lasted (15 KiB
// more a stream than a plain proxy, against 7 now). Each proxy is
// measured in a process of its own (a child running
// TestHeldStreamStacksChild), where no stack freed by the other's streams
// is reused.
func TestHeldStreamStacks(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector deepens every frame")
	}
	if testing.Short() {
		t.Skip("holds 128 loopback streams in two processes")
	}
	measure := func(proxy string) (kib, goroutines float64) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestHeldStreamStacksChild$", "-test.v")
		cmd.Env = append(os.Environ(), heldStacksEnv+"="+proxy)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", proxy, err, out)
		}
		i := bytes.Index(out, []byte("held-stacks "))
		if i < 0 {
			t.Fatalf("%s: no figures in\n%s", proxy, out)
		}
		if _, err := fmt.Sscanf(string(out[i:]), "held-stacks %g %g", &kib, &goroutines); err != nil {
			t.Fatalf("%s: %v in\n%s", proxy, err, out)
		}
		return kib, goroutines
	}
	pk, pg := measure("plain")
	gk, gg := measure("guarded")
	t.Logf("stacks per held stream (client, proxy and upstream in one process): plain %.1f KiB, %.2f goroutines; toolguard-proxy %.1f KiB, %.2f goroutines", pk, pg, gk, gg)
	// Rounded: a count of the moment can miss a goroutine that has not
	// started yet.
	if math.Round(gg)-math.Round(pg) > 1 {
		t.Errorf("a stream held through toolguard-proxy takes %.2f goroutines, through a plain proxy %.2f: want one more at most", gg, pg)
	}
	// One 8 KiB stack more, with room for the noise of a measure over
	// the whole process; a connection's goroutine grown to 16 KiB makes it
	// 15.
	if gk-pk > 11 {
		t.Errorf("a stream held through toolguard-proxy takes %.1f KiB of stacks more than through a plain proxy: want at most the logical call's 8 KiB (and some noise)", gk-pk)
	}
}

// TestHeldStreamStacksChild is TestHeldStreamStacks's child: it holds n
// streams through the proxy heldStacksEnv names and prints what they add
// to the stacks in use and to the goroutines, per stream.
func TestHeldStreamStacksChild(t *testing.T) {
	proxyKind := os.Getenv(heldStacksEnv)
	if proxyKind == "" {
		t.Skip("run by TestHeldStreamStacks")
	}
	const n = 64
	rec, err := os.ReadFile(filepath.Join("../../testdata/wire/openai-chat", "gate-accept.sse"))
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join("../../testdata/wire/openai-chat", "stream-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The upstream sends a stream's first two chunks (the role, then
	// text) and holds it there.
	first := bytes.SplitAfterN(rec, []byte("\n\n"), 3)
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(append(append([]byte(nil), first[0]...), first[1]...))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	var proxy string
	switch proxyKind {
	case "plain":
		upURL, err := url.Parse(up.URL)
		if err != nil {
			t.Fatal(err)
		}
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.MaxIdleConnsPerHost = 2 * n
		defer base.CloseIdleConnections()
		rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(upURL) }, Transport: base}
		plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = http.NewResponseController(w).EnableFullDuplex() // see bench/load's plain proxy
			rp.ServeHTTP(w, r)
		}))
		defer plain.Close()
		proxy = plain.URL
	case "guarded":
		proxy = startProxyTo(t, io.Discard, up.URL, "-log-level", "warn").URL
	default:
		t.Fatalf("%s=%q: want plain or guarded", heldStacksEnv, proxyKind)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * n}}
	defer client.CloseIdleConnections()
	open := func() *http.Response {
		resp, err := client.Post(proxy+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "data: ") {
			t.Fatalf("first line %q, %v", line, err)
		}
		return resp
	}
	warm := open() // what every stream shares: pools, connections
	defer warm.Body.Close()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()
	resps := make([]*http.Response, n)
	for i := range resps {
		resps[i] = open()
	}
	// Each collection halves a stack that uses less than a quarter of
	// itself: what is left is what the held streams need.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	g1 := runtime.NumGoroutine()
	for _, r := range resps {
		r.Body.Close()
	}
	fmt.Printf("held-stacks %g %g\n", float64(m1.StackInuse-m0.StackInuse)/n/1024, float64(g1-g0)/n)
}
