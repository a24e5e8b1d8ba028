package httpguard

import (
	"context"
	"encoding/json"

	"github.com/toolguard/toolguard/guard"
)

// outputMessages renders resp in the GenAI conventions' output messages
// form, for an observer that records content (otelguard's
// WithCaptureContent): one assistant message whose parts are its text and
// its tool calls (arguments as JSON when they parse, else as the text the
// model sent). Values the model sent for a tool's injected arguments
// (guard.WithInjectedArgs) are left out; arguments of such a tool that are
// not a JSON object are not recorded.
func outputMessages(ctx context.Context, p wireProtocol, resp []byte) string {
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
	m := message{Role: "assistant", Parts: []part{}}
	if f := p.finish(resp); len(f) > 0 {
		m.FinishReason = f[0]
	}
	if text, err := p.text(resp); err == nil && text != "" {
		m.Parts = append(m.Parts, part{Type: "text", Content: text})
	}
	calls, _ := p.calls(resp)
	for _, c := range calls {
		text, ok := guard.ArgsToRecord(ctx, c.Name, string(c.Args))
		var args any = text
		switch {
		case !ok:
			args = nil
		case json.Valid([]byte(text)):
			args = json.RawMessage(text)
		}
		m.Parts = append(m.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: args})
	}
	out, err := json.Marshal([]message{m})
	if err != nil {
		return ""
	}
	return string(out)
}
