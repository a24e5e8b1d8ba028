package mcptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/mcptool"
)

type pathArgs struct {
	Path string `json:"path"`
}

// newOddNamesServer is an MCP server whose tools have names OpenAI and
// Anthropic reject: files.read and a/b.
func newOddNamesServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "odd-names", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "files.read", Description: "Read a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathArgs) (*mcp.CallToolResult, any, error) {
			return textResult("contents of " + in.Path), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "a/b", Description: "A tool with a slash."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return textResult("ab"), nil, nil
		})
	return s
}

// openaiNameRule is the pattern OpenAI's API checks tools[].function.name
// against.
var openaiNameRule = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// strictOpenAI is a loopback OpenAI chat completions server that answers
// 400 to a request offering a tool whose name OpenAI rejects, with the
// error body OpenAI sends, and otherwise the next scripted completion.
type strictOpenAI struct {
	mu      sync.Mutex
	answers []func(tools []string) string // each gets the offered tool names
	offered [][]string
}

func (p *strictOpenAI) serve(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, `{"error":{"message":"bad JSON"}}`, http.StatusBadRequest)
			return
		}
		var names []string
		for i, tool := range req.Tools {
			if !openaiNameRule.MatchString(tool.Function.Name) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"message":"Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.","type":"invalid_request_error","param":"tools[%d].function.name","code":"invalid_value"}}`, i, i)
				return
			}
			names = append(names, tool.Function.Name)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.offered = append(p.offered, names)
		if len(p.answers) == 0 {
			http.Error(w, `{"error":{"message":"script exhausted"}}`, http.StatusInternalServerError)
			return
		}
		answer := p.answers[0]
		p.answers = p.answers[1:]
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer(names))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func completion(message string) string {
	return `{"id":"c","object":"chat.completion","created":1,"model":"gpt-test",
	  "usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},
	  "choices":[{"index":0,"finish_reason":"stop","message":` + message + `}]}`
}

// callFirstMatching calls the offered tool whose name starts with prefix.
func callFirstMatching(prefix, args string) func([]string) string {
	return func(names []string) string {
		name := "(none offered)"
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				name = n
				break
			}
		}
		a, _ := json.Marshal(args)
		return completion(`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"` + name + `","arguments":` + string(a) + `}}]}`)
	}
}

func answerText(s string) func([]string) string {
	return func([]string) string { return completion(`{"role":"assistant","content":"` + s + `"}`) }
}

// TestProviderSafeNamesThroughOpenAI offers an MCP server's tools named
// files.read and a/b to langchaingo's OpenAI client talking to a server
// that rejects such names as OpenAI does. The model sees safe names; its
// call of the safe name reaches the MCP server as files.read.
func TestProviderSafeNamesThroughOpenAI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		opts      []mcptool.Option
		prefix    string // of the name the model calls
		wantNames []string
	}{
		{"default mapping", nil, "files_read_",
			[]string{toolstage.SafeToolName("a/b"), toolstage.SafeToolName("files.read")}}, // the server lists a/b first
		{"own mapping", []mcptool.Option{mcptool.WithToolNames(func(n string) string {
			return "fs_" + strings.NewReplacer(".", "_", "/", "_").Replace(n)
		})}, "fs_files_read", []string{"fs_a_b", "fs_files_read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := connect(t, newOddNamesServer())
			tools, err := mcptool.Tools(context.Background(), ts.session, tc.opts...)
			if err != nil {
				t.Fatalf("Tools: %v", err)
			}
			p := &strictOpenAI{answers: []func([]string) string{
				callFirstMatching(tc.prefix, `{"path": "notes.txt"}`),
				answerText("It says hello."),
			}}
			llm, err := openai.New(openai.WithToken("test"), openai.WithBaseURL(p.serve(t)), openai.WithModel("gpt-test"))
			if err != nil {
				t.Fatal(err)
			}
			a := agent.New(llm, toolstage.New(tools), agent.WithMiddleware(middleware.ToolArgValidation(guard.WithUnknownTools(guard.UnknownReject))))
			res, err := a.Run(context.Background(), "What does notes.txt say?")
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Output != "It says hello." {
				t.Errorf("Run() output = %q, want %q", res.Output, "It says hello.")
			}
			if len(p.offered) != 2 || !slices.Equal(p.offered[0], tc.wantNames) || !slices.Equal(p.offered[1], tc.wantNames) {
				t.Errorf("tools offered = %q, want %q on each of 2 requests", p.offered, tc.wantNames)
			}
			if got, want := ts.Calls(), []string{`files.read {"path":"notes.txt"}`}; !slices.Equal(got, want) {
				t.Errorf("MCP server received %q, want %q", got, want)
			}
			if len(res.Steps) != 1 || res.Steps[0].Result != "contents of notes.txt" {
				t.Errorf("Run() steps = %+v, want one step with the file's contents", res.Steps)
			}
		})
	}
}

// TestUnsafeNamesAreRejectedByTheLoopback proves the loopback server is
// strict: names sent unchanged fail the first request with OpenAI's 400.
func TestUnsafeNamesAreRejectedByTheLoopback(t *testing.T) {
	t.Parallel()
	ts := connect(t, newOddNamesServer())
	tools, err := mcptool.Tools(context.Background(), ts.session, mcptool.WithToolNames(func(n string) string { return n }))
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	p := &strictOpenAI{}
	llm, err := openai.New(openai.WithToken("test"), openai.WithBaseURL(p.serve(t)), openai.WithModel("gpt-test"))
	if err != nil {
		t.Fatal(err)
	}
	a := agent.New(llm, toolstage.New(tools, toolstage.WithToolNames(func(n string) string { return n })))
	_, err = a.Run(context.Background(), "What does notes.txt say?")
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "does not match pattern") {
		t.Errorf("Run() with unchanged names error = %v, want OpenAI's 400 about the name pattern", err)
	}
	if len(ts.Calls()) != 0 {
		t.Errorf("MCP server received %q, want nothing", ts.Calls())
	}
}

// TestToolNamesCollision: a mapping that gives two tools one name is an
// error of Tools, naming both.
func TestToolNamesCollision(t *testing.T) {
	t.Parallel()
	ts := connect(t, newOddNamesServer())
	_, err := mcptool.Tools(context.Background(), ts.session, mcptool.WithToolNames(func(string) string { return "same" }))
	if err == nil || !strings.Contains(err.Error(), `"a/b" and "files.read" are both named "same"`) {
		t.Errorf("Tools() error = %v, want the collision of files.read and a/b", err)
	}
	_, err = mcptool.Tools(context.Background(), ts.session, mcptool.WithToolNames(func(string) string { return "" }))
	if err == nil || !strings.Contains(err.Error(), "empty name") {
		t.Errorf("Tools() error = %v, want the empty name reported", err)
	}
}
