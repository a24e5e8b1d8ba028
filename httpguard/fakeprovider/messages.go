package fakeprovider

import "encoding/json"

// Anthropic Messages: https://docs.anthropic.com/en/api/messages and
// https://docs.anthropic.com/en/docs/build-with-claude/streaming

type anthropicUsage struct {
	InputTokens              int    `json:"input_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	ServiceTier              string `json:"service_tier"`
}

func (r *reply) stopReason() string {
	if r.hasCalls() {
		return "tool_use"
	}
	return "end_turn"
}

// block renders a part as a content block; done says whether it is
// complete (else as content_block_start shows it).
func block(p Part, done bool) any {
	switch p.kind {
	case thinkingPart:
		v := struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{Type: "thinking"}
		if done {
			v.Thinking, v.Signature = p.text, p.signature
		}
		return v
	case callPart:
		input := json.RawMessage(`{}`)
		if done {
			input = argsObject(p.args)
		}
		return struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{"tool_use", p.id, p.name, input}
	}
	v := struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{Type: "text"}
	if done {
		v.Text = p.text
	}
	return v
}

func (r *reply) message(content []any, stop *string, usage anthropicUsage) any {
	return struct {
		ID           string         `json:"id"`
		Type         string         `json:"type"`
		Role         string         `json:"role"`
		Model        string         `json:"model"`
		Content      []any          `json:"content"`
		StopReason   *string        `json:"stop_reason"`
		StopSequence *string        `json:"stop_sequence"`
		Usage        anthropicUsage `json:"usage"`
	}{r.id, "message", "assistant", r.model, content, stop, nil, usage}
}

// messageJSON is the message object.
func (r *reply) messageJSON() []byte {
	content := []any{}
	for _, p := range r.parts {
		content = append(content, block(p, true))
	}
	stop := r.stopReason()
	return marshal(r.message(content, &stop, anthropicUsage{r.in, 0, 0, r.out, "standard"}))
}

// messagesStream writes message_start, a ping, each block's
// content_block_start, deltas (text_delta, thinking_delta then
// signature_delta, input_json_delta starting with an empty fragment) and
// content_block_stop, then message_delta and message_stop.
func (r *reply) messagesStream(s *sse) {
	send := func(typ string, v any) { s.event(typ, marshal(v)) }
	type delta struct {
		Type        string  `json:"type"`
		Text        *string `json:"text,omitempty"`
		Thinking    *string `json:"thinking,omitempty"`
		Signature   *string `json:"signature,omitempty"`
		PartialJSON *string `json:"partial_json,omitempty"`
	}
	type blockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta delta  `json:"delta"`
	}
	send("message_start", struct {
		Type    string `json:"type"`
		Message any    `json:"message"`
	}{"message_start", r.message([]any{}, nil, anthropicUsage{r.in, 0, 0, 1, "standard"})})
	send("ping", map[string]string{"type": "ping"})
	for i, p := range r.parts {
		send("content_block_start", struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock any    `json:"content_block"`
		}{"content_block_start", i, block(p, false)})
		switch p.kind {
		case textPart:
			for _, f := range fragments(p.text) {
				send("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "text_delta", Text: &f}})
			}
		case thinkingPart:
			for _, f := range fragments(p.text) {
				send("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "thinking_delta", Thinking: &f}})
			}
			sig := p.signature
			send("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "signature_delta", Signature: &sig}})
		case callPart:
			empty := ""
			send("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "input_json_delta", PartialJSON: &empty}})
			for _, f := range fragments(p.args) {
				send("content_block_delta", blockDelta{"content_block_delta", i, delta{Type: "input_json_delta", PartialJSON: &f}})
			}
		}
		send("content_block_stop", struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}{"content_block_stop", i})
	}
	stop := r.stopReason()
	send("message_delta", struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   string  `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}{Type: "message_delta", Delta: struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}{stop, nil}, Usage: struct {
		OutputTokens int `json:"output_tokens"`
	}{r.out}})
	send("message_stop", map[string]string{"type": "message_stop"})
}
