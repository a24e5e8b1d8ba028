package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// npmDirEnv names a directory where testdata/package.json's packages are
// installed (npm install --prefix DIR), as .ci/run does; requireNPMEnv=1
// (set by .ci/run) turns a missing node, directory or package from a skip
// into a failure.
const (
	npmDirEnv     = "TOOLGUARD_NPM_DIR"
	requireNPMEnv = "TOOLGUARD_REQUIRE_NPM"
)

// nodeClient returns the node binary and NODE_PATH for the openai npm
// package pinned in testdata/package.json, or skips.
func nodeClient(t *testing.T) (node, nodePath, version string) {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		msg := "skipping the official openai npm client against the proxy: " + strings.TrimSpace(fmt.Sprintf(format, args...)) +
			" (to run it: npm install --prefix DIR with cmd/toolguard-proxy/testdata/package.json, then " + npmDirEnv + "=DIR; .ci/run does, and sets " + requireNPMEnv + "=1)"
		if os.Getenv(requireNPMEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var pkg struct{ Dependencies map[string]string }
	b, err := os.ReadFile(filepath.Join("testdata", "package.json"))
	if err != nil || json.Unmarshal(b, &pkg) != nil || pkg.Dependencies["openai"] == "" {
		t.Fatalf("testdata/package.json does not pin openai: %v", err)
	}
	version = pkg.Dependencies["openai"]
	node, err = exec.LookPath("node")
	if err != nil {
		skip("node is not on the PATH")
	}
	dir := os.Getenv(npmDirEnv)
	if dir == "" {
		skip("%s is not set", npmDirEnv)
	}
	nodePath = filepath.Join(dir, "node_modules")
	installed, err := os.ReadFile(filepath.Join(nodePath, "openai", "package.json"))
	var got struct{ Version string }
	if err != nil || json.Unmarshal(installed, &got) != nil {
		skip("openai is not installed under %s", nodePath)
	}
	if got.Version != version {
		t.Fatalf("%s holds openai %s, testdata/package.json pins %s: install again", nodePath, got.Version, version)
	}
	return node, nodePath, version
}

// runNode runs testdata/openai_client.cjs's case against baseURL and
// decodes the line it prints.
func runNode(t *testing.T, node, nodePath, baseURL, name string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "openai_client.cjs"), name)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodePath, "OPENAI_BASE_URL="+baseURL, "OPENAI_API_KEY=", "NODE_NO_WARNINGS=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node openai_client.cjs %s: %v\n%s", name, err, stderr.String())
	}
	t.Logf("node openai_client.cjs %s\n%s", name, stdout.String())
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node printed %q: %v", stdout.String(), err)
	}
}

// The official openai npm package, which nobody here wrote, against the
// proxy in front of a scripted loopback provider: a bad call re-asked, a
// streamed one re-asked, and a request without tools passed through
// byte for byte.
func TestOpenAINodeClient(t *testing.T) {
	t.Parallel()
	node, nodePath, version := nodeClient(t)

	t.Run("bad call re-asked", func(t *testing.T) {
		t.Parallel()
		up := fp.New(
			fp.Reply(fp.Call("get_weather", `{"city": 42}`)),
			fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
		)
		defer up.Close()
		p := startProxy(t, up.URL)
		var out struct {
			OpenAI    string `json:"openai"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
			FinishReason string `json:"finish_reason"`
		}
		runNode(t, node, nodePath, p.URL+"/v1", "reask", &out)
		if out.OpenAI != version {
			t.Errorf("the client is openai %s, want %s", out.OpenAI, version)
		}
		if len(out.ToolCalls) != 1 || out.ToolCalls[0].Function.Name != "get_weather" || out.ToolCalls[0].Function.Arguments != `{"city": "Paris"}` {
			t.Errorf("the client read %+v, want the corrected get_weather call", out.ToolCalls)
		}
		reqs := up.Requests()
		if len(reqs) != 2 || reqs[0].Header.Get("Authorization") != "Bearer sk-test-npm" {
			t.Errorf("upstream got %d requests (want 2), the first with Authorization %q", len(reqs), reqs[0].Header.Get("Authorization"))
		}
	})

	t.Run("stream re-asked", func(t *testing.T) {
		t.Parallel()
		up := fp.New(
			fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": 42}`)),
			fp.Reply(fp.Text("Checking again."), fp.Call("get_weather", `{"city": "Paris"}`)),
		)
		defer up.Close()
		p := startProxy(t, up.URL)
		var out struct {
			ID            string   `json:"id"`
			Content       string   `json:"content"`
			ContentDeltas []string `json:"content_deltas"`
			ToolCalls     []struct {
				Name, Arguments string
			} `json:"tool_calls"`
			FinishReason string `json:"finish_reason"`
		}
		runNode(t, node, nodePath, p.URL+"/v1", "stream", &out)
		if out.Content != "Let me check." || strings.Join(out.ContentDeltas, "") != "Let me check." {
			t.Errorf("the client read text %q in deltas %q, want the first attempt's once", out.Content, out.ContentDeltas)
		}
		if len(out.ToolCalls) != 1 || out.ToolCalls[0].Arguments != `{"city": "Paris"}` || out.FinishReason != "tool_calls" {
			t.Errorf("the client's accumulator read %+v (finish %q), want the corrected call only", out.ToolCalls, out.FinishReason)
		}
		if n := len(up.Requests()); n != 2 {
			t.Errorf("upstream got %d requests, want 2", n)
		}
	})

	t.Run("pass-through", func(t *testing.T) {
		t.Parallel()
		answer := `{"id":"chatcmpl-raw","object":"chat.completion","created":1767225600,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello.","refusal":null},"logprobs":null,"finish_reason":"stop"}],  "x_unknown" : {"kept": [1, 2.50, 1e6]}}`
		up := fp.New(fp.Raw(200, answer))
		defer up.Close()
		p := startProxy(t, up.URL)
		var out struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		}
		runNode(t, node, nodePath, p.URL+"/v1", "passthrough", &out)
		if out.Status != 200 || out.Body != answer {
			t.Errorf("the client read %d\n%s\nwant the upstream's bytes\n%s", out.Status, out.Body, answer)
		}
		if r := up.Requests(); len(r) != 1 || bytes.Contains(r[0].Body, []byte(`"tools"`)) {
			t.Errorf("upstream got %d requests, want the one without tools", len(r))
		}
	})
}
