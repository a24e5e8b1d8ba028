package frameworktest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// weatherArgs is the Go input of the frameworks' get_weather tool: the
// frameworks infer its schema (city a required string, days an optional
// integer) and decode the model's arguments into it.
type weatherArgs struct {
	City string `json:"city"`
	Days int    `json:"days,omitempty"`
}

// toolRuns records the inputs a framework's tool ran with.
type toolRuns struct {
	mu   sync.Mutex
	args []weatherArgs
}

func (r *toolRuns) run(in weatherArgs) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.args = append(r.args, in)
	return "sunny"
}

func (r *toolRuns) all() []weatherArgs {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]weatherArgs(nil), r.args...)
}

// agentScript is the script of an agent's run: a bad call, re-asked by
// the guard; a call with days a numeric string, coerced; after the tool
// ran, the answer.
func agentScript() []fp.Step {
	return []fp.Step{
		fp.Reply(fp.Call("get_weather", `{"city": 42}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris", "days": "3"}`)),
		fp.Reply(fp.Text("It is sunny in Paris.")),
	}
}

// checkAgentRun checks a framework agent's run through the guard: the
// provider got the first call, its re-ask, and the request after the tool
// ran (3 requests, streamed or not as the framework was asked); that last
// one replays the corrected call, not the rejected one; the tool ran
// once, with the corrected arguments.
func checkAgentRun(t *testing.T, srv *fp.Server, stream bool, runs *toolRuns, events []guard.Event, answer string) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the provider got %d requests, want 3 (call, re-ask, after the tool)", len(reqs))
	}
	for i, r := range reqs {
		if r.Stream != stream {
			t.Errorf("request %d: stream %v, want %v", i+1, r.Stream, stream)
		}
	}
	if !strings.Contains(string(reqs[1].Body), `/city: expected string, got 42`) {
		t.Errorf("the re-ask does not carry the violation:\n%s", reqs[1].Body)
	}
	// The corrected call's days, in a JSON string (OpenAI's arguments) or
	// an object (Gemini's args).
	if b := string(reqs[2].Body); strings.Contains(b, `42`) || strings.Contains(b, `expected string`) ||
		!strings.Contains(b, `\"days\":3`) && !strings.Contains(b, `"days":3`) {
		t.Errorf("the agent's next request does not replay the corrected call alone:\n%s", b)
	}
	if got := runs.all(); len(got) != 1 || got[0] != (weatherArgs{City: "Paris", Days: 3}) {
		t.Errorf("the tool ran with %+v, want once with {Paris 3}", got)
	}
	if answer != "It is sunny in Paris." {
		t.Errorf("the agent answered %q", answer)
	}
	kinds := map[guard.EventKind]bool{}
	for _, e := range events {
		kinds[e.Kind] = true
	}
	if !kinds[guard.EventInvalid] || !kinds[guard.EventReask] || !kinds[guard.EventRepaired] {
		t.Errorf("events %v, want invalid, reask, repaired", events)
	}
}

func einoModel(t *testing.T, srv *fp.Server, hc *http.Client) *einoopenai.ChatModel {
	t.Helper()
	m, err := einoopenai.NewChatModel(context.Background(), &einoopenai.ChatModelConfig{
		APIKey: "sk-test", BaseURL: srv.URL + "/v1", Model: "gpt-4o", HTTPClient: hc,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func einoAgent(t *testing.T, srv *fp.Server, hc *http.Client, runs *toolRuns) *react.Agent {
	t.Helper()
	weather, err := utils.InferTool("get_weather", "The weather in a city", func(_ context.Context, in weatherArgs) (string, error) {
		return runs.run(in), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := react.NewAgent(context.Background(), &react.AgentConfig{
		ToolCallingModel: einoModel(t, srv, hc),
		ToolsConfig:      compose.ToolsNodeConfig{Tools: []tool.BaseTool{weather}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Eino's OpenAI chat model inside an Eino ReAct agent, given httpguard's
// client: the model's bad call is re-asked inside the model's call, the
// tool runs once with the corrected, coerced arguments, and the agent
// answers. Generate (sync) and Stream. Without the guard, the same script
// ends the run: Eino's tool cannot decode {"city": 42}.
func TestGuardedEinoReActAgent(t *testing.T) {
	t.Parallel()
	{
		srv := fp.New(agentScript()...)
		defer srv.Close()
		runs := &toolRuns{}
		_, err := einoAgent(t, srv, nil, runs).Generate(context.Background(), []*schema.Message{schema.UserMessage("Weather in Paris for 3 days?")})
		if err == nil || !strings.Contains(err.Error(), "failed to unmarshal arguments") || len(runs.all()) != 0 {
			t.Errorf("unguarded: err %v, tool runs %+v; want the run to fail on the bad call", err, runs.all())
		}
	}
	for _, stream := range []bool{false, true} {
		srv := fp.New(agentScript()...)
		defer srv.Close()
		var events []guard.Event
		runs := &toolRuns{}
		a := einoAgent(t, srv, guardedClient(&events), runs)
		input := []*schema.Message{schema.UserMessage("Weather in Paris for 3 days?")}
		var answer string
		if !stream {
			msg, err := a.Generate(context.Background(), input)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			answer = msg.Content
		} else {
			sr, err := a.Stream(context.Background(), input)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			for {
				m, err := sr.Recv()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				answer += m.Content
			}
			sr.Close()
		}
		checkAgentRun(t, srv, stream, runs, events, answer)
	}
}
