package httpguard_test

import (
	"bufio"
	"bytes"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/httpguard"
)

// heldStreams opens n Chat streams through rt to a loopback upstream that
// sends each stream's first two chunks (the role, then text) and holds it
// there, reads each client's first event, and returns what the n held
// streams add to the heap and the stacks in use, and to the goroutines,
// per stream; then releases them.
func heldStreams(t *testing.T, rt func(http.RoundTripper) http.RoundTripper, n int) (heapKiB, stackKiB, goroutines float64) {
	t.Helper()
	rec, err := os.ReadFile(filepath.Join("../testdata/wire/openai-chat", "gate-accept.sse"))
	if err != nil {
		t.Fatal(err)
	}
	first := bytes.SplitAfterN(rec, []byte("\n\n"), 3)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(append(append([]byte(nil), first[0]...), first[1]...))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	base := &http.Transport{MaxIdleConnsPerHost: n}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: rt(base)}
	body, err := os.ReadFile(filepath.Join("../testdata/wire/openai-chat", "stream-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	open := func() *http.Response {
		resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "data: ") {
			t.Fatalf("first line %q, %v", line, err)
		}
		return resp
	}
	// One stream first, so that what every stream shares (the pools,
	// the server) is there before the measure.
	warm := open()
	defer warm.Body.Close()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	g0 := runtime.NumGoroutine()
	resps := make([]*http.Response, n)
	for i := range resps {
		resps[i] = open()
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	g1 := runtime.NumGoroutine()
	for _, r := range resps {
		r.Body.Close()
	}
	per := func(a, b uint64) float64 { return (float64(b) - float64(a)) / float64(n) / 1024 }
	return per(m0.HeapInuse, m1.HeapInuse), per(m0.StackInuse, m1.StackInuse), float64(g1-g0) / float64(n)
}

// A Chat stream held in flight after its first event costs one goroutine
// more than the same stream without the transport: the logical call's,
// which writes the client's stream. What it costs in memory is logged
// (go test -run HeldStream -v), beside the stream without the transport.
func TestHeldStreamCost(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 128 loopback streams")
	}
	const n = 64
	direct := func(b http.RoundTripper) http.RoundTripper { return b }
	// The first streams a process holds grow what every later one shares
	// (the heap's spans, the runtime's caches): a first round is left out.
	heldStreams(t, direct, n)
	gh, gs, gg := heldStreams(t, func(b http.RoundTripper) http.RoundTripper {
		return httpguard.New(b, httpguard.ToolArgValidation())
	}, n)
	dh, ds, dg := heldStreams(t, direct, n)
	t.Logf("per held stream: direct heap %.1f KiB, stacks %.1f KiB, %.2f goroutines; guarded heap %.1f KiB, stacks %.1f KiB, %.2f goroutines",
		dh, ds, dg, gh, gs, gg)
	// Rounded: a count of the moment can miss a goroutine that has not
	// started yet, or one an idle connection keeps (3.95 direct, once,
	// under -race).
	if math.Round(gg)-math.Round(dg) > 1 {
		t.Errorf("a guarded held stream takes %.2f goroutines, the direct one %.2f: want one more at most", gg, dg)
	}
}
