package fakeprovider_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/httpguard/fakeprovider"
)

func post(t *testing.T, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// events reads an SSE body into its data payloads.
func events(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(strings.TrimRight(sc.Text(), "\r"), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestRequestsRecorded(t *testing.T) {
	t.Parallel()
	srv := fakeprovider.New(fakeprovider.Reply(fakeprovider.Text("a")), fakeprovider.Reply(fakeprovider.Text("b")))
	defer srv.Close()
	post(t, srv.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", `{"contents":[]}`, "x-goog-api-key", "k1")
	post(t, srv.URL+"/v1/messages", `{"model":"m","stream":true}`, "x-api-key", "k2")
	got := srv.Requests()
	if len(got) != 2 {
		t.Fatalf("Requests() = %d requests, want 2", len(got))
	}
	r := got[0]
	if r.Method != "POST" || r.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || r.RawQuery != "alt=sse" ||
		r.Header.Get("x-goog-api-key") != "k1" || string(r.Body) != `{"contents":[]}` || r.Protocol != fakeprovider.Gemini || !r.Stream {
		t.Errorf("Requests()[0] = %+v", r)
	}
	if r := got[1]; r.Protocol != fakeprovider.Messages || !r.Stream || r.Header.Get("x-api-key") != "k2" {
		t.Errorf("Requests()[1] = %+v", r)
	}
	// The copy is the caller's.
	got[0].Body[0] = 'X'
	if srv.Requests()[0].Body[0] != '{' {
		t.Error("Requests() shares its bodies with the server")
	}
	if srv.Remaining() != 0 {
		t.Errorf("Remaining() = %d, want 0", srv.Remaining())
	}
}

func TestExhaustedAndUnknownPath(t *testing.T) {
	t.Parallel()
	srv := fakeprovider.New()
	defer srv.Close()
	tests := []struct {
		path   string
		status int
		want   string
	}{
		{"/v1/chat/completions", 500, `"type":"server_error"`},
		{"/v1/messages", 500, `{"type":"error","error":{"type":"api_error","message":"fakeprovider: script exhausted`},
		{"/v1beta/models/g:generateContent", 500, `{"error":{"code":500,"message":"fakeprovider: script exhausted`},
		{"/v1/embeddings", 404, `no protocol at POST /v1/embeddings`},
	}
	for _, tc := range tests {
		resp := post(t, srv.URL+tc.path, `{}`)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || resp.Header.Get("x-should-retry") != "false" || !strings.Contains(string(b), tc.want) {
			t.Errorf("POST %s = %d %q (x-should-retry %q), want %d containing %q", tc.path, resp.StatusCode, b, resp.Header.Get("x-should-retry"), tc.status, tc.want)
		}
	}
}

func TestErrorShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path   string
		status int
		want   string
	}{
		{"/v1/chat/completions", 429, `{"error":{"message":"fakeprovider: rate limit reached, retry later","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{"/v1/responses", 503, `{"error":{"message":"fakeprovider: service unavailable","type":"server_error","param":null,"code":null}}`},
		{"/v1/messages", 529, `{"type":"error","error":{"type":"overloaded_error","message":"fakeprovider: overloaded"}}`},
		{"/v1beta/models/g:generateContent", 429, `{"error":{"code":429,"message":"fakeprovider: rate limit reached, retry later","status":"RESOURCE_EXHAUSTED"}}`},
	}
	for _, tc := range tests {
		srv := fakeprovider.New(fakeprovider.Error(tc.status, "Retry-After", "3", "retry-after-ms", "3000"))
		resp := post(t, srv.URL+tc.path, `{}`)
		b, _ := io.ReadAll(resp.Body)
		srv.Close()
		if resp.StatusCode != tc.status || string(b) != tc.want || resp.Header.Get("Retry-After") != "3" || resp.Header.Get("retry-after-ms") != "3000" {
			t.Errorf("Error(%d) at %s = %d %s %v, want %s", tc.status, tc.path, resp.StatusCode, b, resp.Header, tc.want)
		}
	}
}

// Streams deliver a call's arguments in several fragments that join to the
// scripted text, invalid JSON included.
func TestStreamFragmentsArguments(t *testing.T) {
	t.Parallel()
	const args = `{"city": "Par` // truncated: invalid JSON
	srv := fakeprovider.New(
		fakeprovider.Reply(fakeprovider.Call("f", args)),
		fakeprovider.Reply(fakeprovider.Call("f", args)),
		fakeprovider.Reply(fakeprovider.Call("f", args)),
	)
	defer srv.Close()

	var chat []string
	for _, d := range events(t, post(t, srv.URL+"/v1/chat/completions", `{"stream":true}`).Body) {
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct{ Function struct{ Arguments string } } `json:"tool_calls"`
				}
			}
		}
		if d == "[DONE]" {
			continue
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Function.Arguments != "" {
					chat = append(chat, tc.Function.Arguments)
				}
			}
		}
	}
	var anth []string
	for _, d := range events(t, post(t, srv.URL+"/v1/messages", `{"stream":true}`).Body) {
		var e struct {
			Delta struct {
				PartialJSON string `json:"partial_json"`
			}
		}
		json.Unmarshal([]byte(d), &e)
		if e.Delta.PartialJSON != "" {
			anth = append(anth, e.Delta.PartialJSON)
		}
	}
	var resp []string
	for _, d := range events(t, post(t, srv.URL+"/v1/responses", `{"stream":true}`).Body) {
		var e struct{ Type, Delta string }
		json.Unmarshal([]byte(d), &e)
		if e.Type == "response.function_call_arguments.delta" {
			resp = append(resp, e.Delta)
		}
	}
	for name, got := range map[string][]string{"chat": chat, "anthropic": anth, "responses": resp} {
		if len(got) < 2 || strings.Join(got, "") != args {
			t.Errorf("%s argument fragments = %q, want several joining to %q", name, got, args)
		}
	}
}

// Concurrent requests each take one step: no step is served twice, and
// every id is distinct.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	const n = 32
	srv := fakeprovider.New()
	defer srv.Close()
	for i := 0; i < n; i++ {
		srv.Append(fakeprovider.Reply(fakeprovider.Text(fmt.Sprint(i)), fakeprovider.Call("f", `{}`)))
	}
	var mu sync.Mutex
	texts, ids := map[string]bool{}, map[string]bool{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var cc struct {
				ID      string
				Choices []struct {
					Message struct {
						Content   string
						ToolCalls []struct{ ID string } `json:"tool_calls"`
					}
				}
			}
			if err := json.NewDecoder(resp.Body).Decode(&cc); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			texts[cc.Choices[0].Message.Content] = true
			ids[cc.ID] = true
			ids[cc.Choices[0].Message.ToolCalls[0].ID] = true
		}()
	}
	wg.Wait()
	if len(texts) != n || len(ids) != 2*n {
		t.Errorf("%d distinct texts and %d distinct ids, want %d and %d", len(texts), len(ids), n, 2*n)
	}
}

// A Gemini call carries no id unless given one; a Raw step answers its
// body as written.
func TestGeminiIDsAndRaw(t *testing.T) {
	t.Parallel()
	srv := fakeprovider.New(
		fakeprovider.Reply(fakeprovider.Call("f", `{}`), fakeprovider.Call("g", `{}`).WithID("c9")),
		fakeprovider.Raw(418, `teapot`, "Content-Type", "text/plain"),
	)
	defer srv.Close()
	b, _ := io.ReadAll(post(t, srv.URL+"/v1beta/models/m:generateContent", `{}`).Body)
	if !strings.Contains(string(b), `[{"functionCall":{"name":"f","args":{}}},{"functionCall":{"id":"c9","name":"g","args":{}}}]`) {
		t.Errorf("Gemini body = %s", b)
	}
	resp := post(t, srv.URL+"/v1/responses", `{}`)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 418 || string(b) != "teapot" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("Raw = %d %q %v", resp.StatusCode, b, resp.Header)
	}
}
