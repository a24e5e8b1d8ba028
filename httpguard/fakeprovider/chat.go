package fakeprovider

import (
	"encoding/json"
	"strings"
)

// OpenAI Chat Completions: https://platform.openai.com/docs/api-reference/chat

type chatFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatToolCall struct {
	Index    *int         `json:"index,omitempty"` // streams only
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function chatFunction `json:"function"`
}

type chatUsage struct {
	PromptTokens            int            `json:"prompt_tokens"`
	CompletionTokens        int            `json:"completion_tokens"`
	TotalTokens             int            `json:"total_tokens"`
	PromptTokensDetails     map[string]int `json:"prompt_tokens_details"`
	CompletionTokensDetails map[string]int `json:"completion_tokens_details"`
}

func (r *reply) chatUsage() *chatUsage {
	return &chatUsage{
		PromptTokens: r.in, CompletionTokens: r.out, TotalTokens: r.in + r.out,
		PromptTokensDetails:     map[string]int{"cached_tokens": 0, "audio_tokens": 0},
		CompletionTokensDetails: map[string]int{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
}

func (r *reply) chatFinish() string {
	if r.hasCalls() {
		return "tool_calls"
	}
	return "stop"
}

// chatJSON is the chat.completion object.
func (r *reply) chatJSON() []byte {
	type message struct {
		Role        string         `json:"role"`
		Content     *string        `json:"content"`
		ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
		Refusal     *string        `json:"refusal"`
		Annotations []any          `json:"annotations"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		Logprobs     any     `json:"logprobs"`
		FinishReason string  `json:"finish_reason"`
	}
	m := message{Role: "assistant", Annotations: []any{}}
	var text strings.Builder
	hasText := false
	for _, p := range r.parts {
		switch p.kind {
		case textPart:
			text.WriteString(p.text)
			hasText = true
		case callPart:
			m.ToolCalls = append(m.ToolCalls, chatToolCall{ID: p.id, Type: "function", Function: chatFunction{Name: p.name, Arguments: p.args}})
		}
	}
	if hasText {
		s := text.String()
		m.Content = &s
	}
	return marshal(struct {
		ID                string     `json:"id"`
		Object            string     `json:"object"`
		Created           int        `json:"created"`
		Model             string     `json:"model"`
		Choices           []choice   `json:"choices"`
		Usage             *chatUsage `json:"usage"`
		ServiceTier       string     `json:"service_tier"`
		SystemFingerprint string     `json:"system_fingerprint"`
	}{r.id, "chat.completion", Created, r.model, []choice{{0, m, nil, r.chatFinish()}}, r.chatUsage(), "default", "fp_fake"})
}

// chatStream writes chat.completion.chunk events and [DONE]: a role chunk,
// the text in fragments, each call's id and name then its arguments in
// fragments, the finish reason, and a usage chunk when the request set
// stream_options.include_usage.
func (r *reply) chatStream(s *sse) {
	var opts struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	_ = json.Unmarshal(r.body, &opts)
	usage := opts.StreamOptions.IncludeUsage

	type delta struct {
		Role      string         `json:"role,omitempty"`
		Content   *string        `json:"content,omitempty"`
		ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
		Refusal   *string        `json:"refusal,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Delta        delta   `json:"delta"`
		Logprobs     any     `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	}
	type chunk struct {
		ID                string     `json:"id"`
		Object            string     `json:"object"`
		Created           int        `json:"created"`
		Model             string     `json:"model"`
		ServiceTier       string     `json:"service_tier"`
		SystemFingerprint string     `json:"system_fingerprint"`
		Choices           []choice   `json:"choices"`
		Usage             *chatUsage `json:"usage,omitempty"`
	}
	send := func(c []choice, u *chatUsage) {
		if c == nil {
			c = []choice{}
		}
		b := marshal(chunk{ID: r.id, Object: "chat.completion.chunk", Created: Created, Model: r.model, ServiceTier: "default", SystemFingerprint: "fp_fake", Choices: c, Usage: u})
		if usage && u == nil {
			// With include_usage every chunk carries "usage": null.
			b = append(b[:len(b)-1], []byte(`,"usage":null}`)...)
		}
		s.event("", b)
	}
	empty := ""
	send([]choice{{Delta: delta{Role: "assistant", Content: &empty, Refusal: nil}}}, nil)
	calls := 0
	for _, p := range r.parts {
		switch p.kind {
		case textPart:
			for _, f := range fragments(p.text) {
				send([]choice{{Delta: delta{Content: &f}}}, nil)
			}
		case callPart:
			i := calls
			calls++
			send([]choice{{Delta: delta{ToolCalls: []chatToolCall{{Index: &i, ID: p.id, Type: "function", Function: chatFunction{Name: p.name, Arguments: ""}}}}}}, nil)
			for _, f := range fragments(p.args) {
				send([]choice{{Delta: delta{ToolCalls: []chatToolCall{{Index: &i, Function: chatFunction{Arguments: f}}}}}}, nil)
			}
		}
	}
	fin := r.chatFinish()
	send([]choice{{FinishReason: &fin}}, nil)
	if usage {
		send(nil, r.chatUsage())
	}
	s.event("", []byte("[DONE]"))
}
