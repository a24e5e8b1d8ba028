package httpguard

import (
	"context"
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// startRedis starts a redis-server of the test's own on a loopback port;
// without one on the PATH it skips, or fails under
// TOOLGUARD_REQUIRE_REDIS=1.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
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
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Two replicas, each a Transport of its own, share a thread's limits
// through Redis: the thread named on the request's context
// (guard.WithThread) is counted across them, tool calls and model calls
// alike.
func TestThreadLimitsAcrossReplicasInRedis(t *testing.T) {
	t.Parallel()
	rdb := startRedis(t)
	store := redisstore.New(rdb)
	call := fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`))
	srv := fp.New(call, call, call, call, call, call)
	defer srv.Close()
	c := wireCases(t)[0] // openai-chat/sync
	// Each replica has stages of its own: only Redis is shared.
	replicas := func(stages func() []Middleware) [2]http.RoundTripper {
		return [2]http.RoundTripper{New(nil, stages()...), New(nil, stages()...)}
	}
	// calls sends three requests of thread on replicas a, b, a; the first
	// two must pass.
	calls := func(rs [2]http.RoundTripper, thread string) exchange {
		ctx := guard.WithThread(context.Background(), thread)
		for i, rt := range rs {
			if ex := do(t, rt, ctx, srv.URL+c.url, c.body); ex.resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: call %d: %d %s", thread, i+1, ex.resp.StatusCode, ex.body)
			}
		}
		return do(t, rs[0], ctx, srv.URL+c.url, c.body)
	}

	ex := calls(replicas(func() []Middleware {
		return []Middleware{
			ModelCallLimit(guard.WithThreadLimit(10), guard.WithThreadStore(store), guard.WithExitBehavior(guard.ExitError)),
			ToolCallLimit(guard.WithThreadLimit(2), guard.WithThreadStore(store), guard.WithExitBehavior(guard.ExitError)),
		}
	}), "chat-42")
	if typ, _ := errorType(t, c.w, ex.body); ex.resp.StatusCode != http.StatusUnprocessableEntity || typ != "tool_call_limit_exceeded" {
		t.Fatalf("third call of the thread: %d %q, want 422 tool_call_limit_exceeded", ex.resp.StatusCode, typ)
	}
	// The counts are Redis's: two tool calls, and two model calls (the
	// blocked call's was released).
	for key, want := range map[string]string{"toolguard:{chat-42}:tool:": "2", "toolguard:{chat-42}:model:": "2"} {
		if got, err := rdb.Get(context.Background(), key).Result(); err != nil || got != want {
			t.Errorf("GET %s = %q, %v; want %q", key, got, err, want)
		}
	}
	n := len(srv.Requests())
	ex = calls(replicas(func() []Middleware {
		return []Middleware{ModelCallLimit(guard.WithThreadLimit(2), guard.WithThreadStore(store), guard.WithExitBehavior(guard.ExitError))}
	}), "chat-43")
	if typ, _ := errorType(t, c.w, ex.body); ex.resp.StatusCode != http.StatusUnprocessableEntity || typ != "model_call_limit_exceeded" {
		t.Fatalf("third model call of the thread: %d %q, want 422 model_call_limit_exceeded", ex.resp.StatusCode, typ)
	}
	if got := len(srv.Requests()) - n; got != 2 {
		t.Errorf("%d requests reached the provider, want 2: the third was blocked", got)
	}
}

// Without a run or thread on the context, the limits read the transcript
// in the request's body: the model's turns after the last user message are
// the run, every model turn the thread.
func TestLimitsReadTheTranscript(t *testing.T) {
	t.Parallel()
	type tc struct {
		name, path string
		body       string
	}
	tools := map[string]string{
		"chat":      `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`,
		"messages":  `"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]`,
		"responses": `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]`,
		"gemini":    `"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object"}}]}]`,
	}
	// Two of the model's calls after the user's last message.
	tests := []tc{
		{"chat", "/v1/chat/completions", `{"model":"gpt-4o","messages":[
			{"role":"system","content":"s"},{"role":"user","content":"Weather?"},
			{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"a","content":"sunny"},
			{"role":"assistant","tool_calls":[{"id":"b","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"b","content":"sunny"}],` + tools["chat"] + `}`},
		{"messages", "/v1/messages", `{"model":"claude","max_tokens":10,"messages":[
			{"role":"user","content":"Weather?"},
			{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"get_weather","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"sunny"}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"get_weather","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"sunny"}]}],` + tools["messages"] + `}`},
		{"responses", "/v1/responses", `{"model":"gpt-4o","input":[
			{"role":"user","content":"Weather?"},
			{"type":"reasoning","id":"rs","summary":[]},{"type":"function_call","call_id":"a","name":"get_weather","arguments":"{}"},
			{"type":"function_call_output","call_id":"a","output":"sunny"},
			{"type":"function_call","call_id":"b","name":"get_weather","arguments":"{}"},
			{"type":"function_call_output","call_id":"b","output":"sunny"}],` + tools["responses"] + `}`},
		{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[
			{"role":"user","parts":[{"text":"Weather?"}]},
			{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"sunny"}}}]},
			{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"sunny"}}}]}],` + tools["gemini"] + `}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(fp.Reply(fp.Call("get_weather", `{}`)), fp.Reply(fp.Call("get_weather", `{}`)), fp.Reply(fp.Call("get_weather", `{}`)))
			defer srv.Close()
			w := recognise(http.MethodPost, tc.path)
			for _, lim := range []struct {
				mw   Middleware
				pass bool
				typ  string
			}{
				{ToolCallLimit(guard.WithRunLimit(3), guard.WithExitBehavior(guard.ExitError)), true, ""},
				{ToolCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitError)), false, "tool_call_limit_exceeded"},
				{ModelCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitError)), false, "model_call_limit_exceeded"},
				{ModelCallLimit(guard.WithRunLimit(3), guard.WithExitBehavior(guard.ExitError)), true, ""},
			} {
				ex := do(t, New(nil, lim.mw), context.Background(), srv.URL+tc.path, []byte(tc.body))
				if lim.pass != (ex.resp.StatusCode == http.StatusOK) {
					t.Errorf("%s: %d %s", lim.typ, ex.resp.StatusCode, ex.body)
				}
				if !lim.pass {
					if typ, _ := errorType(t, w, ex.body); typ != lim.typ {
						t.Errorf("error type %q, want %q", typ, lim.typ)
					}
				}
			}
		})
	}
}
