package middleware

import (
	"encoding/json"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/guardtest"
)

// TestConformance runs guard's conformance kit on the langchaingo codec.
func TestConformance(t *testing.T) {
	t.Parallel()
	guardtest.Run[*Request, *llms.ContentResponse](t, llmsHost{})
}

// llmsHost is the langchaingo host of the conformance kit: requests as an
// agents.Executor sends them, responses as langchaingo's OpenAI client
// returns them (one choice holding every tool call).
type llmsHost struct{}

func (llmsHost) Codec() guard.Codec[*Request, *llms.ContentResponse] { return codec{} }

func (llmsHost) Request(tools []guardtest.Tool) *Request {
	defs := make([]llms.Tool, len(tools))
	for i, t := range tools {
		defs[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: t.Name, Parameters: json.RawMessage(t.Schema)}}
	}
	var opts []llms.CallOption
	if len(defs) > 0 {
		opts = append(opts, llms.WithTools(defs))
	}
	return &Request{
		Messages: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "What is the weather in Paris?")},
		Options:  opts,
	}
}

func (llmsHost) Respond(_ *Request, step guardtest.Step) *llms.ContentResponse {
	ch := &llms.ContentChoice{Content: step.Text, StopReason: "stop"}
	for _, c := range step.Calls {
		ch.ToolCalls = append(ch.ToolCalls, llms.ToolCall{ID: c.ID, Type: "function",
			FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: string(c.Args)}})
		ch.StopReason = "tool_calls"
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{ch}}
}

// Read reads the response as langchaingo's agents do: every choice's tool
// calls, and the choices' text.
func (llmsHost) Read(resp *llms.ContentResponse) ([]guard.Call, string) {
	var calls []guard.Call
	for _, ch := range resp.Choices {
		for _, tc := range ch.ToolCalls {
			calls = append(calls, guard.Call{ID: tc.ID, Name: tc.FunctionCall.Name, Args: []byte(tc.FunctionCall.Arguments)})
		}
	}
	return calls, ResponseText(resp)
}

// Replayed reads the messages after the first: the layout of
// ToolCallMessages, an AI message per call followed by its tool message.
func (llmsHost) Replayed(req *Request) []guardtest.Replay {
	var out []guardtest.Replay
	for _, m := range req.Messages[1:] {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				out = append(out, guardtest.Replay{Name: p.FunctionCall.Name, Args: []byte(p.FunctionCall.Arguments)})
			case llms.ToolCallResponse:
				if len(out) > 0 {
					out[len(out)-1].Result = p.Content
				}
			}
		}
	}
	return out
}

func (llmsHost) Refusals() bool { return false }
