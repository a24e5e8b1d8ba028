//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// roleEnv names the variable that makes the binary a child of the load
// tool rather than the tool itself: "upstream" or "plain". The tool
// re-executes its own binary with it, so that every server runs in a
// process of its own and /proc reads one server's CPU alone.
const roleEnv = "TOOLGUARD_LOAD_ROLE"

// wireEnv names the variable that tells the upstream where the recorded
// exchanges are (testdata/wire/openai-chat); upstreamEnv the variable
// that tells the plain proxy where the upstream is.
const (
	wireEnv     = "TOOLGUARD_LOAD_WIRE"
	upstreamEnv = "TOOLGUARD_LOAD_UPSTREAM"
)

// holdHeader on a streamed request makes the fake upstream stop after
// the stream's first text chunk until releasePath is posted: the tool
// holds streams in flight with it to read what one costs the proxy. The
// proxies pass the header on as they pass every header.
const (
	holdHeader  = "X-Load-Hold"
	releasePath = "/_load/release"
)

// statsPath on the plain proxy answers its goroutines and the bytes it
// has allocated, as toolguard-proxy's /metrics names them (go_goroutines,
// go_memstats_alloc_bytes_total), so that one reader serves both.
const statsPath = "/_load/stats"

// maxRequestBody bounds what the fake upstream reads of a request.
const maxRequestBody = 1 << 20

// runRole serves role until the process is killed; it writes
// "listening ADDR" on stdout once it accepts connections.
func runRole(role string) error {
	var h http.Handler
	switch role {
	case "upstream":
		u, err := newUpstream(os.Getenv(wireEnv))
		if err != nil {
			return err
		}
		h = u
	case "plain":
		up, err := url.Parse(os.Getenv(upstreamEnv))
		if err != nil || up.Host == "" {
			return fmt.Errorf("load: %s=%q: want the upstream's URL", upstreamEnv, os.Getenv(upstreamEnv))
		}
		h = newPlain(up)
	default:
		return fmt.Errorf("load: %s=%q: want upstream or plain", roleEnv, role)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// upstream is the fake OpenAI Chat Completions server: every request is
// answered with the recorded answer that holds a valid call of the
// request's tool (accepted.json), or streamed as the recorded stream that
// does (gate-accept.sse), one flush per event as a provider sends them.
type upstream struct {
	sync   []byte
	events [][]byte
	hold   gate
}

func newUpstream(wire string) (*upstream, error) {
	if wire == "" {
		return nil, fmt.Errorf("load: %s is not set: want testdata/wire/openai-chat's path", wireEnv)
	}
	sync, err := os.ReadFile(filepath.Join(wire, "accepted.json"))
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	sse, err := os.ReadFile(filepath.Join(wire, "gate-accept.sse"))
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	u := &upstream{sync: sync}
	for _, ev := range bytes.SplitAfter(sse, []byte("\n\n")) {
		if len(bytes.TrimSpace(ev)) > 0 {
			u.events = append(u.events, ev)
		}
	}
	if len(u.events) < 3 {
		return nil, fmt.Errorf("load: %s holds %d events, want at least 3", filepath.Join(wire, "gate-accept.sse"), len(u.events))
	}
	return u, nil
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == releasePath {
		u.hold.release()
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "load: the fake upstream answers POST /v1/chat/completions only", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "load: the request is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(u.sync)))
		w.Write(u.sync)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flush := http.NewResponseController(w).Flush
	for i, ev := range u.events {
		if _, err := w.Write(ev); err != nil {
			return
		}
		if err := flush(); err != nil {
			return
		}
		// After the first text chunk (events 0 and 1: the role, "Let m").
		if i == 1 && r.Header.Get(holdHeader) != "" {
			select {
			case <-u.hold.wait():
			case <-r.Context().Done():
				return
			}
		}
	}
}

// gate holds streams until it is released; then the next streams wait on
// a new gate.
type gate struct {
	mu sync.Mutex
	ch chan struct{}
}

func (g *gate) wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	return g.ch
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

// newPlain is the baseline: an httputil.ReverseProxy to up and nothing
// else (but full duplex, which a streaming proxy needs), with as many idle upstream connections as toolguard-proxy keeps
// (512), and statsPath for the tool.
func newPlain(up *url.URL) http.Handler {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 512
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(up) },
		Transport: base,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == statsPath {
			allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
			metrics.Read(allocs)
			fmt.Fprintf(w, "go_goroutines %d\ngo_memstats_alloc_bytes_total %d\n", runtime.NumGoroutine(), allocs[0].Value.Uint64())
			return
		}
		// Without full duplex the server drains and closes the request
		// body once the answer's headers are written, while the
		// transport may still read it (to check it holds no more than
		// its Content-Length): the read fails, the transport closes the
		// upstream connection and the stream is cut (golang/go#40747).
		// toolguard-proxy does not meet this: httpguard reads the body
		// whole before it sends the request.
		_ = http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	})
}
