package sdktest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

func guardedAnthropic(srv *fp.Server, events *[]guard.Event) *anthropic.Client {
	return anthropicClient(srv, option.WithHTTPClient(guardedClient(events)), option.WithMaxRetries(0))
}

func guardedMessageParams() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris for 3 days?"))},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name: "get_weather",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{
				"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}}, Required: []string{"city"}},
		}}},
	}
}

// toolUse returns the only tool_use block of m.
func toolUse(t *testing.T, m *anthropic.Message) (anthropic.ToolUseBlock, int) {
	t.Helper()
	var out []anthropic.ToolUseBlock
	at := -1
	for i, b := range m.Content {
		if b.Type == "tool_use" {
			out, at = append(out, b.AsToolUse()), i
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d tool_use blocks: %s", len(out), m.RawJSON())
	}
	return out[0], at
}

// anthropic-sdk-go, Messages: the bad call is caught and re-asked (the
// tool_result has is_error: true), and AsToolUse() and ToParam() read the
// corrected call's coerced input.
func TestGuardedAnthropic(t *testing.T) {
	t.Parallel()
	srv := fp.New(badThenGood()...)
	defer srv.Close()
	var events []guard.Event
	m, err := guardedAnthropic(srv, &events).Messages.New(context.Background(), guardedMessageParams())
	if err != nil {
		t.Fatal(err)
	}
	checkReask(t, srv, events)
	tr := &transcript{title: "anthropic-sdk-go v2 Messages, sync, through httpguard.New(nil, httpguard.ToolArgValidation())"}
	tu, i := toolUse(t, m)
	tr.read("Content[tool_use].AsToolUse().Input", string(tu.Input))
	p := m.ToParam().OfAssistant.Content[i].OfToolUse
	tr.read("ToParam().OfAssistant.Content[tool_use].OfToolUse.Input", mustJSON(p.Input))
	if !jsonEq(t, string(tu.Input), correctedArgs) || p == nil || !jsonEq(t, mustJSON(p.Input), correctedArgs) || p.ID != tu.ID {
		t.Errorf("AsToolUse() %s, ToParam() %+v", tu.Input, p)
	}
	tr.check(t, "anthropic", srv)
}

// anthropic-sdk-go, Messages streamed: Message.Accumulate takes every
// event (block indexes in order), and the accumulated tool_use holds the
// corrected call.
func TestGuardedAnthropicStream(t *testing.T) {
	t.Parallel()
	srv := fp.New(badThenGood()...)
	defer srv.Close()
	var events []guard.Event
	stream := guardedAnthropic(srv, &events).Messages.NewStreaming(context.Background(), guardedMessageParams())
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	checkReask(t, srv, events)
	tr := &transcript{title: "anthropic-sdk-go v2 Messages, streamed into Message.Accumulate, through httpguard.New(nil, httpguard.ToolArgValidation())"}
	tu, i := toolUse(t, &acc)
	tr.read("acc.Content[tool_use].AsToolUse().Input", string(tu.Input))
	p := acc.ToParam().OfAssistant.Content[i].OfToolUse
	tr.read("acc.ToParam().OfAssistant.Content[tool_use].OfToolUse.Input", mustJSON(p.Input))
	tr.read("acc.Content[0].AsText().Text", acc.Content[0].AsText().Text)
	tr.read("acc.StopReason", acc.StopReason)
	if !jsonEq(t, string(tu.Input), correctedArgs) || !jsonEq(t, mustJSON(p.Input), correctedArgs) || acc.Content[0].AsText().Text != "Let me check." {
		t.Errorf("accumulated %s", acc.RawJSON())
	}
	tr.check(t, "anthropic-stream", srv)
}

// weatherTool is a BetaTool that records the input of each execution.
type weatherTool struct {
	mu     sync.Mutex
	inputs []string
}

func (*weatherTool) Name() string        { return "get_weather" }
func (*weatherTool) Description() string { return "The weather in a city." }
func (*weatherTool) InputSchema() anthropic.BetaToolInputSchemaParam {
	return anthropic.BetaToolInputSchemaParam{Properties: map[string]any{
		"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}}, Required: []string{"city"}}
}

func (w *weatherTool) Execute(_ context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	w.mu.Lock()
	w.inputs = append(w.inputs, string(input))
	w.mu.Unlock()
	return []anthropic.BetaToolResultBlockParamContentUnion{{OfText: &anthropic.BetaTextBlockParam{Text: "sunny"}}}, nil
}

// anthropic-sdk-go's tool runner (DisableThread: the whole history in each
// request, as httpguard guards it with re-asks): the rejected call never
// runs, the tool runs once with the corrected input, and the runner ends
// with the model's answer.
func TestGuardedAnthropicToolRunner(t *testing.T) {
	t.Parallel()
	srv := fp.New(append(badThenGood(), fp.Reply(fp.Text("It is sunny in Paris.")))...)
	defer srv.Close()
	var events []guard.Event
	tool := &weatherTool{}
	p := guardedMessageParams()
	runner := guardedAnthropic(srv, &events).Beta.Messages.NewToolRunner([]anthropic.BetaTool{tool}, anthropic.BetaToolRunnerParams{
		BetaMessageNewParams: anthropic.BetaMessageNewParams{Model: p.Model, MaxTokens: p.MaxTokens,
			Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Weather in Paris for 3 days?"))}},
		DisableThread: true,
	})
	last, err := runner.RunToCompletion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the provider got %d requests, want 3 (bad, re-ask, after the tool ran)", len(reqs))
	}
	tr := &transcript{title: "anthropic-sdk-go v2 BetaToolRunner (DisableThread), through httpguard.New(nil, httpguard.ToolArgValidation())"}
	tr.read("the tool's inputs", tool.inputs)
	tr.read("RunToCompletion's last message text", last.Content[0].AsText().Text)
	if len(tool.inputs) != 1 || !jsonEq(t, tool.inputs[0], correctedArgs) || last.Content[0].AsText().Text != "It is sunny in Paris." {
		t.Errorf("the tool ran with %v; last message %s", tool.inputs, last.RawJSON())
	}
	tr.check(t, "anthropic-tool-runner", srv)
}
