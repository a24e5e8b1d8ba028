package middleware

import (
	"context"
	"encoding/json"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
)

// modelResult is what an observer is told of a request that reached the
// model: its error, or the response's token usage and stop reasons, and
// its output messages on demand.
func modelResult(ctx context.Context, resp *llms.ContentResponse, err error) guard.ModelResult {
	r := guard.ModelResult{Err: err, InputTokens: -1, OutputTokens: -1}
	if err != nil || resp == nil {
		return r
	}
	u := usageOf(resp)
	r.InputTokens, r.OutputTokens = int(u.input), int(u.output)
	r.FinishReasons = finishReasons(resp)
	r.Output = func() string { return outputMessages(ctx, resp) }
	return r
}

// finishReasons returns the stop reasons of resp's choices that have one.
func finishReasons(resp *llms.ContentResponse) []string {
	var reasons []string
	for _, ch := range resp.Choices {
		if ch != nil && ch.StopReason != "" {
			reasons = append(reasons, ch.StopReason)
		}
	}
	return reasons
}

// outputMessages renders resp's choices in the GenAI conventions' output
// messages form: one assistant message per choice, whose parts are its
// text and its tool calls (arguments as JSON when they parse, else as the
// text the model sent). Values the model sent for a tool's injected
// arguments (guard.WithInjectedArgs) are left out; arguments of such a
// tool that are not a JSON object are not recorded.
func outputMessages(ctx context.Context, resp *llms.ContentResponse) string {
	type part struct {
		Type      string `json:"type"`
		Content   string `json:"content,omitempty"`
		ID        string `json:"id,omitempty"`
		Name      string `json:"name,omitempty"`
		Arguments any    `json:"arguments,omitempty"`
	}
	type message struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason,omitempty"`
	}
	msgs := make([]message, 0, len(resp.Choices))
	for _, ch := range resp.Choices {
		if ch == nil {
			continue
		}
		m := message{Role: "assistant", Parts: []part{}, FinishReason: ch.StopReason}
		if ch.Content != "" {
			m.Parts = append(m.Parts, part{Type: "text", Content: ch.Content})
		}
		for _, tc := range ch.ToolCalls {
			p := part{Type: "tool_call", ID: tc.ID}
			if tc.FunctionCall != nil {
				p.Name = tc.FunctionCall.Name
				text, ok := guard.ArgsToRecord(ctx, p.Name, tc.FunctionCall.Arguments)
				var args any = text
				switch {
				case !ok:
					args = nil
				case json.Valid([]byte(text)):
					args = json.RawMessage(text)
				}
				p.Arguments = args
			}
			m.Parts = append(m.Parts, p)
		}
		msgs = append(msgs, m)
	}
	out, err := json.Marshal(msgs)
	if err != nil {
		return ""
	}
	return string(out)
}
