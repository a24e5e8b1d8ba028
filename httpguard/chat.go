package httpguard

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/toolguard/toolguard/guard"
)

// chatWire is OpenAI Chat Completions (POST …/chat/completions), which
// OpenAI-compatible servers (vLLM, Ollama, OpenRouter, Azure, …) speak too.
// Tool calls are choices[0].message.tool_calls[i], whose
// function.arguments is a JSON text inside a JSON string.
type chatWire struct{}

func (chatWire) name() string { return "openai.chat" }

func (chatWire) parseRequest(_ string, body []byte) (wireRequest, error) {
	var req struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		Messages json.RawMessage `json:"messages"`
		N        *int            `json:"n"`
		Store    bool            `json:"store"`
		Tools    []struct {
			Type     string `json:"type"`
			Function *struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if _, err := parseBody(body); err != nil {
		return wireRequest{}, err
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return wireRequest{}, fmt.Errorf("%w: %v", errJSON, err)
	}
	if len(req.Messages) == 0 || req.Messages[0] != '[' {
		return wireRequest{}, fmt.Errorf("%w: chat request without messages", errUnsupported)
	}
	if req.N != nil && *req.N > 1 {
		return wireRequest{}, fmt.Errorf("%w: n = %d choices", errUnsupported, *req.N)
	}
	out := wireRequest{Model: req.Model, Stream: req.Stream, State: serverState{Stored: req.Store}}
	for _, t := range req.Tools {
		if t.Type != "function" || t.Function == nil {
			continue
		}
		out.Tools = append(out.Tools, wireTool{Name: t.Function.Name, Schema: nullToNil(t.Function.Parameters)})
	}
	return out, nil
}

// nullToNil returns nil for an absent or null raw value.
func nullToNil(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return m
}

// chatMessage returns the span of choices[0].message, ok false when the
// response has no choice; more than one choice is errUnsupported.
func chatMessage(b []byte) (sp span, ok bool, err error) {
	r, err := parseBody(b)
	if err != nil {
		return span{}, false, err
	}
	ch, ok, err := field(b, r, "choices")
	if err != nil || !ok {
		return span{}, false, err
	}
	es, err := arrayElems(b, ch)
	if err != nil || len(es) == 0 {
		return span{}, false, err
	}
	if len(es) > 1 {
		return span{}, false, fmt.Errorf("%w: %d choices", errUnsupported, len(es))
	}
	return at(b, es[0], "message")
}

// chatToolCalls returns the spans of the message's tool calls; a call that
// is not a function call is errUnsupported.
func chatToolCalls(b []byte, msg span) ([]span, error) {
	tc, ok, err := field(b, msg, "tool_calls")
	if err != nil || !ok || kind(b, tc) == 'n' {
		return nil, err
	}
	es, err := arrayElems(b, tc)
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		if typ, err := optStr(b, e, "type"); err != nil || (typ != "function" && typ != "") {
			return nil, fmt.Errorf("%w: tool call of type %q", errUnsupported, typ)
		}
	}
	return es, nil
}

func (chatWire) calls(resp []byte) ([]wireCall, error) {
	msg, ok, err := chatMessage(resp)
	if err != nil || !ok {
		return nil, err
	}
	tcs, err := chatToolCalls(resp, msg)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(tcs))
	for _, tc := range tcs {
		id, err := optStr(resp, tc, "id")
		if err != nil {
			return nil, err
		}
		fn, ok, err := field(resp, tc, "function")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: tool call without function", errJSON)
		}
		name, err := optStr(resp, fn, "name")
		if err != nil {
			return nil, err
		}
		args, err := optStr(resp, fn, "arguments")
		if err != nil {
			return nil, err
		}
		out = append(out, wireCall{ID: id, Name: name, Args: []byte(args)})
	}
	return out, nil
}

func (chatWire) accept(resp []byte, args [][]byte) ([]byte, error) {
	msg, ok, err := chatMessage(resp)
	if err != nil {
		return nil, err
	}
	var tcs []span
	if ok {
		if tcs, err = chatToolCalls(resp, msg); err != nil {
			return nil, err
		}
	}
	if err := checkArgs(args, len(tcs)); err != nil {
		return nil, err
	}
	var edits []edit
	for i, a := range args {
		if a == nil {
			continue
		}
		v, ok, err := at(resp, tcs[i], "function", "arguments")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: tool call %d has no arguments", errJSON, i)
		}
		edits = append(edits, edit{at: v, text: marshalString(string(a))})
	}
	return apply(resp, edits...), nil
}

// chatReplay is the response's message as a request message: every member
// kept as it was but those a request may not carry (null values,
// annotations) and audio, which a request names by its id alone.
func chatReplay(b []byte, msg span) ([]byte, error) {
	var audioID string
	if a, ok, err := field(b, msg, "audio"); err != nil {
		return nil, err
	} else if ok && kind(b, a) == '{' {
		if audioID, err = optStr(b, a, "id"); err != nil {
			return nil, err
		}
	}
	out, err := dropMembers(b, msg, func(m member) bool {
		return kind(b, m.v) == 'n' || m.key == "annotations" || m.key == "audio"
	})
	if err != nil || audioID == "" {
		return out, err
	}
	r, _ := root(out)
	e, err := setMember(out, r, "audio", append(append([]byte(`{"id":`), marshalString(audioID)...), '}'))
	if err != nil {
		return nil, err
	}
	return apply(out, e), nil
}

func (w chatWire) reask(req, resp []byte, answers []wireAnswer) ([]byte, error) {
	r, err := parseBody(req)
	if err != nil {
		return nil, err
	}
	msgs, ok, err := requestField(req, r, "messages")
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: request without messages", errJSON)
	}
	msg, ok, err := chatMessage(resp)
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: response without a message", errJSON)
	}
	calls, err := w.calls(resp)
	if err != nil {
		return nil, err
	}
	if len(answers) != len(calls) {
		return nil, fmt.Errorf("httpguard: %d answers for %d calls", len(answers), len(calls))
	}
	replay, err := chatReplay(resp, msg)
	if err != nil {
		return nil, err
	}
	items := [][]byte{replay}
	for i, c := range calls {
		m, err := marshal(struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			Content    string `json:"content"`
		}{"tool", c.ID, answers[i].Content})
		if err != nil {
			return nil, err
		}
		items = append(items, m)
	}
	e, err := appendElems(req, msgs, items...)
	if err != nil {
		return nil, err
	}
	return apply(req, e), nil
}

func (chatWire) usage(resp []byte) (wireUsage, error) {
	var r struct {
		Model string `json:"model"`
		Usage *struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := decodeResponse(resp, &r); err != nil {
		return wireUsage{}, err
	}
	u := wireUsage{Model: r.Model}
	if r.Usage != nil {
		u.Reported = true
		u.InputTokens, u.OutputTokens = r.Usage.PromptTokens, r.Usage.CompletionTokens
	}
	return u, nil
}

// openAIErrorBody is OpenAI's error shape, for Chat Completions and
// Responses alike: {"error": {"message", "type", "param", "code"}}.
func openAIErrorBody(typ, msg string) []byte {
	b, _ := marshal(struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    string  `json:"code"`
		} `json:"error"`
	}{Error: struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	}{msg, typ, nil, typ}})
	return b
}

func (chatWire) errorBody(_ int, typ, msg string) []byte { return openAIErrorBody(typ, msg) }

func (chatWire) newAssembler() assembler { return &chatAssembler{} }

func (chatWire) newGate(w io.Writer) streamGate { return newChatGate(w) }

// text is the message's content and refusal.
func (chatWire) text(resp []byte) (string, error) {
	var r struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := decodeResponse(resp, &r); err != nil || len(r.Choices) == 0 {
		return "", err
	}
	m := r.Choices[0].Message
	var s string
	if m.Content != nil {
		s = *m.Content
	}
	if m.Refusal != nil {
		s += *m.Refusal
	}
	return s, nil
}

func (chatWire) finish(resp []byte) []string {
	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if decodeResponse(resp, &r) != nil || len(r.Choices) == 0 || r.Choices[0].FinishReason == "" {
		return nil
	}
	return []string{r.Choices[0].FinishReason}
}

func (chatWire) end(model, text string) []byte {
	b, _ := marshal(map[string]any{
		"id": "chatcmpl-toolguard-" + standInID(), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text, "refusal": nil},
			"logprobs": nil, "finish_reason": "stop"}},
		"usage": map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
	})
	return b
}

// transcript reads messages: a user message is a user turn, an assistant
// message a model turn with its function calls; system, developer and tool
// messages are neither.
func (chatWire) transcript(req []byte) []guard.Message {
	var r struct {
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if json.Unmarshal(req, &r) != nil {
		return nil
	}
	out := make([]guard.Message, len(r.Messages))
	for i, m := range r.Messages {
		switch m.Role {
		case "user":
			out[i].Kind = guard.UserTurn
		case "assistant":
			out[i].Kind = guard.ModelTurn
			for _, c := range m.ToolCalls {
				out[i].Calls = append(out[i].Calls, c.Function.Name)
			}
		}
	}
	return out
}
