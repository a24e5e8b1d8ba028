package httpguard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/guardtest"
)

// TestConformance runs guard's conformance kit on the wire codec, once per
// protocol: requests as the SDKs send them, responses as the providers
// answer, read back as a client reads the JSON.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, p := range []wireHost{&chatHost{}, &messagesHost{}, &responsesHost{}, &geminiHost{}, &ollamaHost{}, &bedrockHost{}} {
		t.Run(p.protocol().name(), func(t *testing.T) {
			t.Parallel()
			guardtest.Run[*request, *response](t, hostOf{p})
		})
	}
}

// wireHost is one protocol's half of the conformance host: bodies in and
// out.
type wireHost interface {
	protocol() wireProtocol
	path() string
	requestBody(tools []guardtest.Tool) string
	responseBody(n int64, step guardtest.Step) string
	read(resp []byte) ([]guard.Call, string)
	replayed(req []byte) []guardtest.Replay
	refusals() bool
}

// hostOf adapts a wireHost to guardtest.Host over the codec.
type hostOf struct{ w wireHost }

// ids numbers the responses of every host, so that ids never repeat.
var ids atomic.Int64

func (h hostOf) Codec() guard.Codec[*request, *response] { return codec{} }

func (h hostOf) Request(tools []guardtest.Tool) *request {
	body := []byte(h.w.requestBody(tools))
	wire, err := h.w.protocol().parseRequest(h.w.path(), body)
	if err != nil {
		panic(fmt.Sprintf("%s: %v", body, err))
	}
	hr, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1"+h.w.path(), nil)
	return &request{proto: h.w.protocol(), wire: wire, body: body, http: hr}
}

func (h hostOf) Respond(_ *request, step guardtest.Step) *response {
	b := []byte(h.w.responseBody(ids.Add(1), step))
	if !json.Valid(b) {
		panic("invalid response: " + string(b))
	}
	return &response{proto: h.w.protocol(), body: b, status: http.StatusOK, header: http.Header{}}
}

func (h hostOf) Read(resp *response) ([]guard.Call, string) { return h.w.read(resp.body) }

func (h hostOf) Replayed(req *request) []guardtest.Replay { return h.w.replayed(req.body) }

func (h hostOf) Refusals() bool { return h.w.refusals() }

const userText = "What is the weather in Paris?"

func mustMarshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// argsValue is a call's arguments as a JSON value for protocols that carry
// an object (Anthropic input, Gemini args): the object, or the text as a
// JSON string when it is not JSON, as providers' streams leave it.
func argsValue(args []byte) json.RawMessage {
	if json.Valid(args) {
		return json.RawMessage(args)
	}
	return json.RawMessage(mustMarshal(string(args)))
}

// argsText reads an object-valued argument back as the client does: the
// raw JSON, or the text a JSON string holds.
func argsText(v json.RawMessage) []byte {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return []byte(s)
	}
	return v
}

type chatHost struct{}

func (*chatHost) protocol() wireProtocol { return chatWire{} }
func (*chatHost) path() string           { return "/v1/chat/completions" }
func (*chatHost) refusals() bool         { return false }

func (*chatHost) requestBody(tools []guardtest.Tool) string {
	var ts []any
	for _, t := range tools {
		ts = append(ts, map[string]any{"type": "function", "function": map[string]any{"name": t.Name, "parameters": json.RawMessage(t.Schema)}})
	}
	return mustMarshal(map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": userText}}, "tools": ts})
}

func (*chatHost) responseBody(n int64, step guardtest.Step) string {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if step.Text != "" {
		msg["content"] = step.Text
	}
	finish := "stop"
	var calls []any
	for i, c := range step.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n, i)
		}
		calls = append(calls, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": c.Name, "arguments": string(c.Args)}})
		finish = "tool_calls"
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	return mustMarshal(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1, "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}}})
}

type chatMsg struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	ToolCallID string  `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (*chatHost) read(resp []byte) ([]guard.Call, string) {
	var r struct {
		Choices []struct{ Message chatMsg } `json:"choices"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		panic(err)
	}
	m := r.Choices[0].Message
	var calls []guard.Call
	for _, c := range m.ToolCalls {
		calls = append(calls, guard.Call{ID: c.ID, Name: c.Function.Name, Args: []byte(c.Function.Arguments)})
	}
	text := ""
	if m.Content != nil {
		text = *m.Content
	}
	return calls, text
}

func (*chatHost) replayed(req []byte) []guardtest.Replay {
	var r struct{ Messages []chatMsg }
	if err := json.Unmarshal(req, &r); err != nil {
		panic(err)
	}
	var out []guardtest.Replay
	at := map[string]int{}
	for _, m := range r.Messages[1:] {
		for _, c := range m.ToolCalls {
			at[c.ID] = len(out)
			out = append(out, guardtest.Replay{Name: c.Function.Name, Args: []byte(c.Function.Arguments)})
		}
		if i, ok := at[m.ToolCallID]; ok && m.Role == "tool" && m.Content != nil {
			out[i].Result = *m.Content
		}
	}
	return out
}

type messagesHost struct{}

func (*messagesHost) protocol() wireProtocol { return messagesWire{} }
func (*messagesHost) path() string           { return "/v1/messages" }
func (*messagesHost) refusals() bool         { return true }

func (*messagesHost) requestBody(tools []guardtest.Tool) string {
	var ts []any
	for _, t := range tools {
		ts = append(ts, map[string]any{"name": t.Name, "input_schema": json.RawMessage(t.Schema)})
	}
	return mustMarshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024,
		"messages": []any{map[string]any{"role": "user", "content": userText}}, "tools": ts})
}

func (*messagesHost) responseBody(n int64, step guardtest.Step) string {
	content := []any{map[string]any{"type": "thinking", "thinking": "Let me think.", "signature": fmt.Sprintf("sig%d", n)}}
	if step.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": step.Text})
	}
	stop := "end_turn"
	for i, c := range step.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d_%d", n, i)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": argsValue(c.Args)})
		stop = "tool_use"
	}
	return mustMarshal(map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 10, "output_tokens": 5}})
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (*messagesHost) read(resp []byte) ([]guard.Call, string) {
	var r struct{ Content []anthropicBlock }
	if err := json.Unmarshal(resp, &r); err != nil {
		panic(err)
	}
	var calls []guard.Call
	var text strings.Builder
	for _, b := range r.Content {
		switch b.Type {
		case "tool_use":
			calls = append(calls, guard.Call{ID: b.ID, Name: b.Name, Args: argsText(b.Input)})
		case "text":
			text.WriteString(b.Text)
		}
	}
	return calls, text.String()
}

func (*messagesHost) replayed(req []byte) []guardtest.Replay {
	var r struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
	}
	if err := json.Unmarshal(req, &r); err != nil {
		panic(err)
	}
	var out []guardtest.Replay
	at := map[string]int{}
	for _, m := range r.Messages[1:] {
		var blocks []anthropicBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			switch b.Type {
			case "tool_use":
				at[b.ID] = len(out)
				out = append(out, guardtest.Replay{Name: b.Name, Args: argsText(b.Input)})
			case "tool_result":
				if i, ok := at[b.ToolUseID]; ok {
					out[i].Result, out[i].Refused = string(argsText(b.Content)), b.IsError
				}
			}
		}
	}
	return out
}

type responsesHost struct{}

func (*responsesHost) protocol() wireProtocol { return responsesWire{} }
func (*responsesHost) path() string           { return "/v1/responses" }
func (*responsesHost) refusals() bool         { return false }

func (*responsesHost) requestBody(tools []guardtest.Tool) string {
	var ts []any
	for _, t := range tools {
		ts = append(ts, map[string]any{"type": "function", "name": t.Name, "parameters": json.RawMessage(t.Schema)})
	}
	return mustMarshal(map[string]any{"model": "gpt-4o", "input": userText, "tools": ts, "store": false,
		"include": []string{"reasoning.encrypted_content"}})
}

func (*responsesHost) responseBody(n int64, step guardtest.Step) string {
	output := []any{map[string]any{"id": fmt.Sprintf("rs_%d", n), "type": "reasoning", "summary": []any{}, "encrypted_content": "enc"}}
	if step.Text != "" {
		output = append(output, map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": step.Text, "annotations": []any{}}}})
	}
	for i, c := range step.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n, i)
		}
		output = append(output, map[string]any{"id": fmt.Sprintf("fc_%d_%d", n, i), "type": "function_call", "status": "completed",
			"call_id": id, "name": c.Name, "arguments": string(c.Args)})
	}
	return mustMarshal(map[string]any{"id": fmt.Sprintf("resp_%d", n), "object": "response", "status": "completed", "model": "gpt-4o",
		"output": output, "store": false})
}

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    string          `json:"output"`
	Content   json.RawMessage `json:"content"`
}

func (*responsesHost) read(resp []byte) ([]guard.Call, string) {
	var r struct{ Output []responsesItem }
	if err := json.Unmarshal(resp, &r); err != nil {
		panic(err)
	}
	var calls []guard.Call
	var text strings.Builder
	for _, it := range r.Output {
		switch it.Type {
		case "function_call":
			calls = append(calls, guard.Call{ID: it.CallID, Name: it.Name, Args: []byte(it.Arguments)})
		case "message":
			var parts []struct{ Type, Text string }
			_ = json.Unmarshal(it.Content, &parts)
			for _, p := range parts {
				text.WriteString(p.Text)
			}
		}
	}
	return calls, text.String()
}

func (*responsesHost) replayed(req []byte) []guardtest.Replay {
	var r struct{ Input json.RawMessage }
	if err := json.Unmarshal(req, &r); err != nil {
		panic(err)
	}
	var items []responsesItem
	if json.Unmarshal(r.Input, &items) != nil {
		return nil // a string: the original request
	}
	var out []guardtest.Replay
	at := map[string]int{}
	for _, it := range items[1:] {
		switch it.Type {
		case "function_call":
			at[it.CallID] = len(out)
			out = append(out, guardtest.Replay{Name: it.Name, Args: []byte(it.Arguments)})
		case "function_call_output":
			if i, ok := at[it.CallID]; ok {
				out[i].Result = it.Output
			}
		}
	}
	return out
}

type geminiHost struct{}

func (*geminiHost) protocol() wireProtocol { return geminiWire{} }
func (*geminiHost) path() string           { return "/v1beta/models/gemini-2.5-flash:generateContent" }
func (*geminiHost) refusals() bool         { return false }

func (*geminiHost) requestBody(tools []guardtest.Tool) string {
	var decls []any
	for _, t := range tools {
		decls = append(decls, map[string]any{"name": t.Name, "parametersJsonSchema": json.RawMessage(t.Schema)})
	}
	return mustMarshal(map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": userText}}}},
		"tools": []any{map[string]any{"functionDeclarations": decls}}})
}

func (*geminiHost) responseBody(n int64, step guardtest.Step) string {
	parts := []any{map[string]any{"text": "Thinking.", "thought": true, "thoughtSignature": "c2ln"}}
	if step.Text != "" {
		parts = append(parts, map[string]any{"text": step.Text})
	}
	for _, c := range step.Calls {
		fc := map[string]any{"name": c.Name, "args": argsValue(c.Args)}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		parts = append(parts, map[string]any{"functionCall": fc})
	}
	return mustMarshal(map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts},
		"finishReason": "STOP", "index": 0}}, "modelVersion": "gemini-2.5-flash", "responseId": fmt.Sprintf("resp-%d", n)})
}

type geminiPart struct {
	Text         string `json:"text"`
	Thought      bool   `json:"thought"`
	FunctionCall *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		Name     string `json:"name"`
		Response struct {
			Error  json.RawMessage `json:"error"`
			Output json.RawMessage `json:"output"`
		} `json:"response"`
	} `json:"functionResponse"`
}

func (*geminiHost) read(resp []byte) ([]guard.Call, string) {
	var r struct {
		Candidates []struct {
			Content struct{ Parts []geminiPart }
		}
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		panic(err)
	}
	var calls []guard.Call
	var text strings.Builder
	for _, p := range r.Candidates[0].Content.Parts {
		switch {
		case p.FunctionCall != nil:
			calls = append(calls, guard.Call{Name: p.FunctionCall.Name, Args: argsText(p.FunctionCall.Args)})
		case !p.Thought:
			text.WriteString(p.Text)
		}
	}
	return calls, text.String()
}

// replayed pairs calls and responses by position, as Gemini does for calls
// without ids.
func (*geminiHost) replayed(req []byte) []guardtest.Replay {
	var r struct {
		Contents []struct {
			Role  string
			Parts []geminiPart
		}
	}
	if err := json.Unmarshal(req, &r); err != nil {
		panic(err)
	}
	var out []guardtest.Replay
	k := 0
	for _, c := range r.Contents[1:] {
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				out = append(out, guardtest.Replay{Name: p.FunctionCall.Name, Args: argsText(p.FunctionCall.Args)})
			case p.FunctionResponse != nil && k < len(out):
				res := p.FunctionResponse.Response.Output
				if res == nil {
					res = p.FunctionResponse.Response.Error
				}
				out[k].Result = string(argsText(res))
				k++
			}
		}
	}
	return out
}
