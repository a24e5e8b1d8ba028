package httpguard

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/guardtest"
)

// ollamaHost is Ollama's native /api/chat for the conformance kit: arguments
// as objects, the tool's result a {"role":"tool"} message naming the tool.
type ollamaHost struct{}

func (*ollamaHost) protocol() wireProtocol { return ollamaWire{} }
func (*ollamaHost) path() string           { return "/api/chat" }
func (*ollamaHost) refusals() bool         { return false }

func (*ollamaHost) requestBody(tools []guardtest.Tool) string {
	var ts []any
	for _, t := range tools {
		ts = append(ts, map[string]any{"type": "function", "function": map[string]any{"name": t.Name, "parameters": json.RawMessage(t.Schema)}})
	}
	return mustMarshal(map[string]any{"model": "llama3.2", "stream": false,
		"messages": []any{map[string]any{"role": "user", "content": userText}}, "tools": ts})
}

func (*ollamaHost) responseBody(n int64, step guardtest.Step) string {
	msg := map[string]any{"role": "assistant", "content": step.Text}
	var calls []any
	for i, c := range step.Calls {
		tc := map[string]any{"function": map[string]any{"index": i, "name": c.Name, "arguments": argsValue(c.Args)}}
		if c.ID != "" {
			tc["id"] = c.ID
		}
		calls = append(calls, tc)
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	return mustMarshal(map[string]any{"model": "llama3.2", "created_at": fmt.Sprintf("2026-11-29T12:00:%02dZ", n%60), "message": msg,
		"done": true, "done_reason": "stop", "prompt_eval_count": 10, "eval_count": 5})
}

type ollamaHostMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolName string `json:"tool_name"`
}

func (*ollamaHost) read(resp []byte) ([]guard.Call, string) {
	var r struct{ Message ollamaHostMessage }
	if err := json.Unmarshal(resp, &r); err != nil {
		panic(err)
	}
	var calls []guard.Call
	for _, tc := range r.Message.ToolCalls {
		calls = append(calls, guard.Call{ID: tc.ID, Name: tc.Function.Name, Args: argsText(tc.Function.Arguments)})
	}
	return calls, r.Message.Content
}

// replayed pairs calls and tool messages by position, as Ollama's templates
// read them.
func (*ollamaHost) replayed(req []byte) []guardtest.Replay {
	var r struct{ Messages []ollamaHostMessage }
	if err := json.Unmarshal(req, &r); err != nil {
		panic(err)
	}
	var out []guardtest.Replay
	k := 0
	for _, m := range r.Messages[1:] {
		switch m.Role {
		case "assistant":
			for _, tc := range m.ToolCalls {
				out = append(out, guardtest.Replay{Name: tc.Function.Name, Args: argsText(tc.Function.Arguments)})
			}
		case "tool":
			if k < len(out) {
				out[k].Result = m.Content
				k++
			}
		}
	}
	return out
}

// bedrockHost is Amazon Bedrock's Converse for the conformance kit:
// toolUse blocks with object input, results as toolResult blocks with
// status "error" for a refused call.
type bedrockHost struct{}

func (*bedrockHost) protocol() wireProtocol { return bedrockWire{} }
func (*bedrockHost) path() string           { return "/model/anthropic.claude-sonnet-4-v1:0/converse" }
func (*bedrockHost) refusals() bool         { return true }

func (*bedrockHost) requestBody(tools []guardtest.Tool) string {
	var ts []any
	for _, t := range tools {
		ts = append(ts, map[string]any{"toolSpec": map[string]any{"name": t.Name, "inputSchema": map[string]any{"json": json.RawMessage(t.Schema)}}})
	}
	return mustMarshal(map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"text": userText}}}},
		"toolConfig": map[string]any{"tools": ts}})
}

func (*bedrockHost) responseBody(n int64, step guardtest.Step) string {
	var content []any
	if step.Text != "" {
		content = append(content, map[string]any{"text": step.Text})
	}
	stop := "end_turn"
	for i, c := range step.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("tooluse_%d_%d", n, i)
		}
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": id, "name": c.Name, "input": argsValue(c.Args)}})
		stop = "tool_use"
	}
	if content == nil {
		content = []any{}
	}
	return mustMarshal(map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": stop, "usage": map[string]int{"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}, "metrics": map[string]int{"latencyMs": 100}})
}

type bedrockBlockJSON struct {
	Text    string `json:"text"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ToolResult *struct {
		ToolUseID string `json:"toolUseId"`
		Content   []struct {
			Text string `json:"text"`
		} `json:"content"`
		Status string `json:"status"`
	} `json:"toolResult"`
}

func (*bedrockHost) read(resp []byte) ([]guard.Call, string) {
	var r struct {
		Output struct {
			Message struct{ Content []bedrockBlockJSON }
		}
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		panic(err)
	}
	var calls []guard.Call
	var text strings.Builder
	for _, b := range r.Output.Message.Content {
		switch {
		case b.ToolUse != nil:
			calls = append(calls, guard.Call{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Args: argsText(b.ToolUse.Input)})
		default:
			text.WriteString(b.Text)
		}
	}
	return calls, text.String()
}

func (*bedrockHost) replayed(req []byte) []guardtest.Replay {
	var r struct {
		Messages []struct {
			Role    string
			Content []bedrockBlockJSON
		}
	}
	if err := json.Unmarshal(req, &r); err != nil {
		panic(err)
	}
	var out []guardtest.Replay
	at := map[string]int{}
	for _, m := range r.Messages[1:] {
		for _, b := range m.Content {
			switch {
			case b.ToolUse != nil:
				at[b.ToolUse.ToolUseID] = len(out)
				out = append(out, guardtest.Replay{Name: b.ToolUse.Name, Args: argsText(b.ToolUse.Input)})
			case b.ToolResult != nil:
				if i, ok := at[b.ToolResult.ToolUseID]; ok {
					var text strings.Builder
					for _, c := range b.ToolResult.Content {
						text.WriteString(c.Text)
					}
					out[i].Result, out[i].Refused = text.String(), b.ToolResult.Status == "error"
				}
			}
		}
	}
	return out
}
