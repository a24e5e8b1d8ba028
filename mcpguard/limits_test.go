package mcpguard_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"github.com/toolguard/toolguard/mcpguard"
)

// withHeader returns rt sending header name: value on every request.
func withHeader(rt http.RoundTripper, name, value string) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set(name, value)
		return rt.RoundTrip(r)
	})
}

var forecastArgs = map[string]any{"city": "Oslo", "days": 2}

// A session limit of 2: the third call of the session is answered by the
// transport with an isError result naming the limit and never reaches the
// server; an invalid call before it did not count; another session counts
// its own calls.
func TestSessionLimit(t *testing.T) {
	for _, mode := range []serverMode{modes[1], modes[3]} {
		t.Run(mode.name, func(t *testing.T) {
			srv, rec := newServer(t, mode)
			var ev events
			rt := mcpguard.New(srv.Client().Transport, mcpguard.WithEventHandler(ev.handler),
				mcpguard.WithCallLimit(mcpguard.PerSession, guard.WithThreadLimit(2)))
			cs := connectVia(t, srv, mode, rt, nil)
			if res, _ := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: map[string]any{"city": "Oslo"}}); !res.IsError {
				t.Fatalf("the invalid call was not refused")
			}
			var results []string
			for range 3 {
				res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: forecastArgs})
				if err != nil {
					t.Fatalf("CallTool: %v", err)
				}
				results = append(results, text(res))
				if len(results) == 3 && !res.IsError {
					t.Errorf("the third call: isError false, want true")
				}
			}
			want := []string{`{"temp":21.5}`, `{"temp":21.5}`,
				`Tool call limit exceeded: at most 2 tool calls are allowed per MCP session (2 made); do not call "forecast" again.`}
			if !slices.Equal(results, want) {
				t.Errorf("results %q, want %q", results, want)
			}
			if n := len(rec.received("tools/call")); n != 2 {
				t.Errorf("the server received %d tools/call, want 2", n)
			}
			if k := ev.kinds(); !slices.Equal(k, []string{"invalid", "limit"}) {
				t.Errorf("events %q, want [invalid limit]", k)
			} else if e := ev.all[1]; e.Middleware != "ToolCallLimit" || !errors.As(e.Err, new(*guard.LimitExceededError)) {
				t.Errorf("limit event %+v, want ToolCallLimit's with a *guard.LimitExceededError", e)
			}
			t.Logf("client read for the third call: %q", results[2])

			if mode.stateless {
				return // no session: the same endpoint and credentials are one count
			}
			other := connectVia(t, srv, mode, rt, nil)
			if res, err := other.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: forecastArgs}); err != nil || res.IsError {
				t.Errorf("another session's first call = %v, %v; want the tool's result", res, err)
			}
		})
	}
}

// A per-tool thread limit counted in one store by two transports (two
// replicas of a proxy): the thread's third call of the tool is refused
// whichever transport carries it; other tools and other threads are not
// counted.
func TestThreadLimitAcrossTransports(t *testing.T) {
	mode := modes[3]
	srv, rec := newServer(t, mode)
	store := guard.NewMemoryThreadStore(100)
	limit := mcpguard.WithCallLimit(mcpguard.PerThread, guard.WithThreadLimit(2), guard.WithToolName("forecast"), guard.WithThreadStore(store))
	a := mcpguard.New(srv.Client().Transport, limit)
	b := mcpguard.New(srv.Client().Transport, limit)
	call := func(rt http.RoundTripper, thread, tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		cs := connectVia(t, srv, mode, withHeader(rt, mcpguard.ThreadHeader, thread), nil)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("CallTool(%s): %v", tool, err)
		}
		return res
	}
	for i, rt := range []http.RoundTripper{a, b} {
		if res := call(rt, "t1", "forecast", forecastArgs); res.IsError {
			t.Fatalf("call %d of thread t1: %q, want the tool's result", i+1, text(res))
		}
	}
	res := call(a, "t1", "forecast", forecastArgs)
	want := `Tool call limit exceeded: "forecast" may be called at most 2 times per thread (2 made); do not call it again.`
	if !res.IsError || text(res) != want {
		t.Errorf("the third call of thread t1 = isError %v %q, want %q", res.IsError, text(res), want)
	}
	if res := call(b, "t1", "echo", map[string]any{"text": "hi"}); res.IsError {
		t.Errorf("echo in thread t1: %q, want the tool's result (the limit is forecast's)", text(res))
	}
	if res := call(b, "t2", "forecast", forecastArgs); res.IsError {
		t.Errorf("thread t2's first call: %q, want the tool's result", text(res))
	}
	if n := len(rec.received("tools/call")); n != 4 {
		t.Errorf("the server received %d tools/call, want 4", n)
	}
	if n := store.Count(guard.ThreadKey{Thread: "mcpguard/thread:t1", Tool: "forecast"}); n != 2 {
		t.Errorf("the store counts %d calls of forecast in thread t1, want 2", n)
	}
	t.Logf("client read for thread t1's third call: %q", text(res))
}

// The same across two transports sharing a real redis-server
// (redisstore), as replicas do.
func TestThreadLimitOnRedis(t *testing.T) {
	s, err := redisserver.Start(t.TempDir())
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv("TOOLGUARD_REQUIRE_REDIS") == "1" {
			t.Fatalf("%v, and TOOLGUARD_REQUIRE_REDIS=1 requires the Redis tests to run", err)
		}
		t.Skipf("skipping the test against a real Redis: %v (set TOOLGUARD_REQUIRE_REDIS=1 to make this a failure)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	client := redis.NewClient(&redis.Options{Addr: s.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })

	mode := modes[1]
	srv, rec := newServer(t, mode)
	limit := mcpguard.WithCallLimit(mcpguard.PerThread, guard.WithThreadLimit(3), guard.WithThreadStore(redisstore.New(client)))
	replicas := []http.RoundTripper{mcpguard.New(srv.Client().Transport, limit), mcpguard.New(srv.Client().Transport, limit)}
	var refused []int
	for i := range 5 {
		cs := connectVia(t, srv, mode, withHeader(replicas[i%2], mcpguard.ThreadHeader, "conv-1"), nil)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: forecastArgs})
		if err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		if res.IsError {
			refused = append(refused, i+1)
		}
	}
	if !slices.Equal(refused, []int{4, 5}) {
		t.Errorf("calls refused %v, want [4 5]", refused)
	}
	if n := len(rec.received("tools/call")); n != 3 {
		t.Errorf("the server received %d tools/call, want 3", n)
	}
}

// failingStore is a ThreadStore whose backend is down.
type failingStore struct{}

var errDown = errors.New("store down")

func (failingStore) Reserve(context.Context, guard.ThreadKey, int, int) (int, bool, error) {
	return 0, false, errDown
}
func (failingStore) Release(context.Context, guard.ThreadKey, int) error { return errDown }

// A store that fails refuses the call (nothing forwarded, a store_error
// event), as guard's limits fail; with guard.WithStoreFailOpen the call
// passes uncounted.
func TestLimitStoreFails(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		name := "closed"
		opts := []guard.LimitOption{guard.WithThreadLimit(5), guard.WithThreadStore(failingStore{})}
		if failOpen {
			name = "open"
			opts = append(opts, guard.WithStoreFailOpen())
		}
		t.Run(name, func(t *testing.T) {
			mode := modes[1]
			srv, rec := newServer(t, mode)
			var ev events
			cs := connect(t, srv, mode, mcpguard.WithEventHandler(ev.handler), mcpguard.WithCallLimit(mcpguard.PerSession, opts...))
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: forecastArgs})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			calls := len(rec.received("tools/call"))
			if failOpen {
				if res.IsError || calls != 1 {
					t.Errorf("= isError %v %q, %d calls reached the server; want the tool's result", res.IsError, text(res), calls)
				}
			} else {
				want := `Not executed: tool "forecast" was not called: the call limit could not be counted, so the call was refused`
				if !res.IsError || text(res) != want || calls != 0 {
					t.Errorf("= isError %v %q, %d calls reached the server; want isError %q and none", res.IsError, text(res), calls, want)
				}
			}
			if k := ev.kinds(); !slices.Equal(k, []string{string(guard.EventStoreError)}) {
				t.Errorf("events %q, want [store_error]", k)
			}
			t.Logf("client read: isError=%v %q", res.IsError, text(res))
		})
	}
}

// A thread header that is not one id of at most MaxThreadID bytes
// refuses the call; without a thread, a PerThread limit does not count the
// call, or refuses it failing closed.
func TestThreadHeaderBadInput(t *testing.T) {
	mode := modes[3]
	srv, rec := newServer(t, mode)
	limit := mcpguard.WithCallLimit(mcpguard.PerThread, guard.WithThreadLimit(1))
	cases := []struct {
		name       string
		values     []string
		failClosed bool
		refused    bool
	}{
		{"two values", []string{"a", "b"}, false, true},
		{"too long", []string{strings.Repeat("x", mcpguard.MaxThreadID+1)}, false, true},
		{"none, fail open", nil, false, false},
		{"none, fail closed", nil, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := []mcpguard.Option{limit, mcpguard.WithEventHandler(func(context.Context, guard.Event) {})}
			if tc.failClosed {
				opts = append(opts, mcpguard.WithFailClosed())
			}
			rt := mcpguard.New(srv.Client().Transport, opts...)
			hdr := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				r = r.Clone(r.Context())
				r.Header[mcpguard.ThreadHeader] = tc.values
				return rt.RoundTrip(r)
			})
			before := len(rec.received("tools/call"))
			cs := connectVia(t, srv, mode, hdr, nil)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "forecast", Arguments: forecastArgs})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			reached := len(rec.received("tools/call")) - before
			if res.IsError != tc.refused || reached != map[bool]int{true: 0, false: 1}[tc.refused] {
				t.Errorf("= isError %v %q, %d calls reached the server; want refused %v", res.IsError, text(res), reached, tc.refused)
			}
		})
	}
}

// Invalid options panic at construction.
func TestWithCallLimitPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"no limit":      func() { mcpguard.WithCallLimit(mcpguard.PerSession) },
		"unknown scope": func() { mcpguard.WithCallLimit(mcpguard.CallScope(9), guard.WithThreadLimit(1)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// Bad input and limits: a malformed message passes to the server and is
// not counted; a call of a tool whose schema does not compile counts when
// it passes failing open, and is refused uncounted failing closed.
func TestLimitsWithBadInput(t *testing.T) {
	for _, failClosed := range []bool{false, true} {
		name := "fail open"
		if failClosed {
			name = "fail closed"
		}
		t.Run(name, func(t *testing.T) {
			mode := modes[3]
			srv, rec := newServer(t, mode)
			store := guard.NewMemoryThreadStore(10)
			opts := []mcpguard.Option{mcpguard.WithEventHandler(func(context.Context, guard.Event) {}),
				mcpguard.WithCallLimit(mcpguard.PerThread, guard.WithThreadLimit(5), guard.WithThreadStore(store))}
			if failClosed {
				opts = append(opts, mcpguard.WithFailClosed())
			}
			rt := withHeader(mcpguard.New(srv.Client().Transport, opts...), mcpguard.ThreadHeader, "t")
			for _, body := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"forecast","argu`,
				`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"forecast","arguments":{}}}`,
			} {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatalf("RoundTrip(%q): %v", body, err)
				}
				resp.Body.Close()
				if all := rec.all(); all[len(all)-1] != body {
					t.Errorf("the server received %q, want %q", all[len(all)-1], body)
				}
			}
			key := guard.ThreadKey{Thread: "mcpguard/thread:t"}
			if n := store.Count(key); n != 0 {
				t.Errorf("after malformed messages the store counts %d, want 0", n)
			}
			cs := connectVia(t, srv, mode, rt, nil)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bad_schema", Arguments: map[string]any{"u": 1}})
			if err != nil {
				t.Fatal(err)
			}
			want := map[bool]int{false: 1, true: 0}[failClosed]
			if n := store.Count(key); n != want || res.IsError != failClosed {
				t.Errorf("bad_schema: isError %v, the store counts %d; want isError %v and %d", res.IsError, n, failClosed, want)
			}
		})
	}
}
