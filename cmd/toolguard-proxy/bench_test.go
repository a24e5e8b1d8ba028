package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// BenchmarkProxy measures the proxy under load on loopback: 1 (the
// overhead alone), 64 and 256 concurrent clients send b.N chat requests with a tool (a valid call
// comes back and is validated), sync or streamed, first straight to the
// upstream, then through the proxy. It reports
//
//   - req/s: the proxy's throughput (ns/op is its inverse); direct-req/s
//     the upstream's alone, on the same cores;
//   - p50-ms, p99-ms: the latency of a request through the proxy;
//   - added-p50-ms, added-p99-ms: that latency less the direct call's;
//   - proxy-B/inflight, proxy-goroutines/inflight: what one request in
//     flight costs the proxy (heap and goroutines with clients requests
//     held at the upstream, less the same held directly);
//   - goroutines-left: goroutines over the count before the load, once the
//     clients have closed their connections (0: all came back).
//
// Bounded in count and time, and only loopback:
//
//	go test -run '^$' -bench BenchmarkProxy -benchtime 2000x -benchmem ./cmd/toolguard-proxy
func BenchmarkProxy(b *testing.B) {
	for _, stream := range []bool{false, true} {
		for _, clients := range []int{1, 64, 256} {
			mode := "sync"
			if stream {
				mode = "stream"
			}
			b.Run(fmt.Sprintf("%s/clients=%d", mode, clients), func(b *testing.B) { benchProxy(b, stream, clients) })
		}
	}
}

func benchProxy(b *testing.B, stream bool, clients int) {
	up := newBenchUpstream(b, stream)
	defer up.Close()
	p := startProxyTo(b, io.Discard, up.URL, "-log-level", "info")
	body := chatBody
	if stream {
		body = streamBody
	}
	direct, proxied := newBenchClient(clients), newBenchClient(clients)
	runtime.GC()
	goroutines := runtime.NumGoroutine()

	directStart := time.Now()
	directLat := load(b, direct, up.URL, body, b.N, clients)
	directElapsed := time.Since(directStart)
	b.ResetTimer()
	start := time.Now()
	proxyLat := load(b, proxied, p.URL, body, b.N, clients)
	elapsed := time.Since(start)
	b.StopTimer()

	heapDirect, gDirect := inflight(b, direct, up, up.URL, body, clients)
	heapProxy, gProxy := inflight(b, proxied, up, p.URL, body, clients)

	direct.CloseIdleConnections()
	proxied.CloseIdleConnections()
	p.srv.base.CloseIdleConnections()
	left := settle(goroutines)

	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(b.N)/directElapsed.Seconds(), "direct-req/s")
	b.ReportMetric(ms(pct(proxyLat, 50)), "p50-ms")
	b.ReportMetric(ms(pct(proxyLat, 99)), "p99-ms")
	b.ReportMetric(ms(pct(proxyLat, 50)-pct(directLat, 50)), "added-p50-ms")
	b.ReportMetric(ms(pct(proxyLat, 99)-pct(directLat, 99)), "added-p99-ms")
	b.ReportMetric(float64(heapProxy-heapDirect)/float64(clients), "proxy-B/inflight")
	b.ReportMetric(float64(gProxy-gDirect)/float64(clients), "proxy-goroutines/inflight")
	b.ReportMetric(float64(left), "goroutines-left")
}

// benchUpstream answers every request at once with the same recorded
// answer (a text and a valid get_weather call, sync or streamed), except
// while holding: then it keeps each request in flight (a stream after its
// first event) until released.
type benchUpstream struct {
	*httptest.Server
	events  [][]byte // the answer's SSE events; one sync body when not streaming
	stream  bool
	mu      sync.Mutex
	hold    chan struct{} // non-nil: hold requests until closed
	holding atomic.Int64
}

func newBenchUpstream(b *testing.B, stream bool) *benchUpstream {
	// Record the answer once from the scripted provider.
	rec := fp.New(fp.Reply(fp.Text("It is sunny in Paris."), fp.Call("get_weather", `{"city": "Paris"}`)))
	body := chatBody
	if stream {
		body = streamBody
	}
	resp, err := http.Post(rec.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rec.Close()
	u := &benchUpstream{stream: stream, events: [][]byte{answer}}
	if stream {
		u.events = nil
		for ev := range strings.SplitAfterSeq(string(answer), "\n\n") {
			if ev != "" {
				u.events = append(u.events, []byte(ev))
			}
		}
	}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	return u
}

func (u *benchUpstream) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	hold := u.hold
	u.mu.Unlock()
	if !u.stream {
		if hold != nil {
			u.holding.Add(1)
			<-hold
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(u.events[0])
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i, ev := range u.events {
		w.Write(ev)
		w.(http.Flusher).Flush()
		if i == 0 && hold != nil {
			u.holding.Add(1)
			<-hold
		}
	}
}

func newBenchClient(clients int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxIdleConns: 2 * clients}}
}

// load sends n requests from clients goroutines and returns their
// latencies.
func load(b *testing.B, c *http.Client, base, body string, n, clients int) []time.Duration {
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				start := time.Now()
				if err := roundTrip(c, base, body); err != nil {
					b.Error(err)
					return
				}
				lat[i] = append(lat[i], time.Since(start))
			}
		})
	}
	wg.Wait()
	return slices.Concat(lat...)
}

// roundTrip sends one request and reads its answer whole.
func roundTrip(c *http.Client, base, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte("get_weather")) {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, got)
	}
	return nil
}

// inflight holds clients requests at the upstream and returns the live
// heap and the goroutines over what they were before.
func inflight(b *testing.B, c *http.Client, up *benchUpstream, base, body string, clients int) (heap int64, goroutines int) {
	// Warm the connections so that the figure is of requests, not dials.
	load(b, c, base, body, clients, clients)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()

	release := make(chan struct{})
	up.mu.Lock()
	up.hold = release
	up.mu.Unlock()
	up.holding.Store(0)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			if err := roundTrip(c, base, body); err != nil {
				b.Error(err)
			}
		})
	}
	for up.holding.Load() < int64(clients) {
		time.Sleep(time.Millisecond)
	}
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	g1 := runtime.NumGoroutine()
	up.mu.Lock()
	up.hold = nil
	up.mu.Unlock()
	close(release)
	wg.Wait()
	return int64(during.HeapAlloc) - int64(before.HeapAlloc), g1 - g0
}

// settle waits up to 10s for the goroutines to fall back to baseline and
// returns how many are over it.
func settle(baseline int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline || time.Now().After(deadline) {
			return max(n-baseline, 0)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pct is the p-th percentile of d.
func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
