package otelguard

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/tmc/langchaingo/llms"
	injectedargs "github.com/toolguard/toolguard/internal/injected"
	"github.com/toolguard/toolguard/middleware"
	"go.opentelemetry.io/otel/attribute"
)

// keyOutputMessages is the GenAI attribute holding what the model answered,
// recorded only with WithCaptureContent.
const keyOutputMessages = attribute.Key("gen_ai.output.messages")

// outputMessages renders resp's choices in the GenAI conventions' output
// messages form: one assistant message per choice, whose parts are its
// text and its tool calls (arguments as JSON when they parse, else as the
// text the model sent). Values the model sent for a tool's injected
// arguments (middleware.WithInjectedArgs) are left out; arguments of such a
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
				text, ok := capturedArgs(ctx, p.Name, tc.FunctionCall.Arguments)
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

// capturedArgs returns the arguments text of a call of the tool name as
// content capture records it: without the values of the tool's injected
// arguments (middleware.WithInjectedArgs); false when the tool has injected
// arguments and text is not a JSON object, which may hold a forged value
// Drop could not remove: such arguments are not recorded.
func capturedArgs(ctx context.Context, name, text string) (string, bool) {
	injected := middleware.InjectedArgsFrom(ctx, name)
	if len(injected) == 0 {
		return text, true
	}
	text, _ = injectedargs.Drop(text, injected)
	return text, isObject(text)
}

// isObject reports whether text is one JSON object (blanks around it
// allowed).
func isObject(text string) bool {
	t := strings.TrimSpace(text)
	return len(t) > 0 && t[0] == '{' && json.Valid([]byte(t))
}
