package httpguard

import (
	"context"
	"net/http"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// A user message that carries tool results and text beside them (the
// order Anthropic documents: the tool_result blocks first, then text) goes
// on with the run the results answer, it does not start a new one: a run
// limit of one call, without a run on the context, lets the first turn's
// call through and stops the second's, on Anthropic and Gemini alike.
func TestRunLimitWithTextBesideToolResults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path string
		turns      []string
	}{
		{"anthropic", "/v1/messages", []string{
			`{"model":"claude","max_tokens":10,"messages":[
				{"role":"user","content":"Weather in Paris, then Rome?"}],
				"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`,
			`{"model":"claude","max_tokens":10,"messages":[
				{"role":"user","content":"Weather in Paris, then Rome?"},
				{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"get_weather","input":{"city":"Paris"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"sunny"},{"type":"text","text":"Now Rome, please."}]}],
				"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`,
		}},
		{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent", []string{
			`{"contents":[{"role":"user","parts":[{"text":"Weather in Paris, then Rome?"}]}],
				"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object"}}]}]}`,
			`{"contents":[
				{"role":"user","parts":[{"text":"Weather in Paris, then Rome?"}]},
				{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"sunny"}}},{"text":"Now Rome, please."}]}],
				"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object"}}]}]}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(fp.Reply(fp.Call("get_weather", `{"city":"Paris"}`)), fp.Reply(fp.Call("get_weather", `{"city":"Rome"}`)))
			defer srv.Close()
			w := recognise(http.MethodPost, tc.path)
			tr := New(nil, ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError)))
			ex := do(t, tr, context.Background(), srv.URL+tc.path, []byte(tc.turns[0]))
			if ex.resp.StatusCode != http.StatusOK {
				t.Fatalf("the first turn: %d %s, want its one call through", ex.resp.StatusCode, ex.body)
			}
			ex = do(t, tr, context.Background(), srv.URL+tc.path, []byte(tc.turns[1]))
			typ := ""
			if ex.resp.StatusCode != http.StatusOK {
				typ, _ = errorType(t, w, ex.body)
			}
			if ex.resp.StatusCode == http.StatusOK || typ != "tool_call_limit_exceeded" {
				t.Errorf("the second turn: %d %s, want tool_call_limit_exceeded: the run's second call", ex.resp.StatusCode, ex.body)
			}
		})
	}
}
