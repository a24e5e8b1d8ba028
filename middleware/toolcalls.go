package middleware

import (
	"encoding/json"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// toolCall locates one tool call in a response. Providers put tool calls in
// [ToolCalls]; Anthropic returns one choice per content block, so the calls of
// one response may be spread over several choices. A choice that only has the
// legacy FuncCall (no ToolCalls) contributes that call too.
type toolCall struct {
	choice int
	index  int                // index in Choices[choice].ToolCalls; -1 for a legacy FuncCall
	fn     *llms.FunctionCall // nil when the provider sent a tool call without a function
	id     string
	typ    string
	// mirror is the choice's legacy FuncCall when it is a separate copy of
	// this (first) call's function, so that rewritten arguments reach both.
	mirror *llms.FunctionCall
}

func (c *toolCall) name() string {
	if c.fn == nil {
		return ""
	}
	return c.fn.Name
}

// setArgs replaces the call's arguments in the response, and in a legacy
// FuncCall that mirrors the call.
func (c *toolCall) setArgs(args string) {
	if c.mirror != nil {
		c.mirror.Arguments = args
	}
	c.fn.Arguments = args
}

func (c *toolCall) args() string {
	if c.fn == nil {
		return ""
	}
	return c.fn.Arguments
}

// collectToolCalls returns the tool calls of every choice of resp, in order.
// Calls without an id get a deterministic one, written back into resp so that
// the caller, the re-ask transcript and the tool messages all agree on it.
// salt distinguishes the calls of different turns of one conversation (the
// number of messages in the request is a good salt).
func collectToolCalls(resp *llms.ContentResponse, salt int) []toolCall {
	if resp == nil {
		return nil
	}
	var calls []toolCall
	for ci, ch := range resp.Choices {
		if ch == nil {
			continue
		}
		if len(ch.ToolCalls) == 0 {
			if ch.FuncCall != nil {
				calls = append(calls, toolCall{choice: ci, index: -1, fn: ch.FuncCall})
			}
			continue
		}
		for ti := range ch.ToolCalls {
			tc := &ch.ToolCalls[ti]
			c := toolCall{choice: ci, index: ti, fn: tc.FunctionCall, id: tc.ID, typ: tc.Type}
			if ti == 0 && ch.FuncCall != nil && tc.FunctionCall != nil && ch.FuncCall != tc.FunctionCall && *ch.FuncCall == *tc.FunctionCall {
				c.mirror = ch.FuncCall
			}
			calls = append(calls, c)
		}
	}
	for i := range calls {
		c := &calls[i]
		if c.id != "" {
			continue
		}
		c.id = synthesizeID(salt, i, c.name(), c.args())
		if c.index >= 0 {
			resp.Choices[c.choice].ToolCalls[c.index].ID = c.id
		}
	}
	return calls
}

// synthesizeID returns a stable id for a call that came without one: the same
// call at the same place in the same conversation always gets the same id.
func synthesizeID(salt, position int, name, args string) string {
	h := fnv.New64a()
	h.Write([]byte(strconv.Itoa(salt)))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(position)))
	h.Write([]byte{0})
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write([]byte(args))
	return "call_tg" + strconv.FormatUint(h.Sum64(), 36)
}

// ResponseText joins the non-empty text content of every choice of resp
// with newlines.
func ResponseText(resp *llms.ContentResponse) string {
	var parts []string
	for _, ch := range resp.Choices {
		if ch != nil && ch.Content != "" {
			parts = append(parts, ch.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolCalls returns the tool calls of every choice of resp, in order:
// providers put them in ToolCalls, Anthropic returns one choice per content
// block, and a choice with only the legacy FuncCall contributes that call.
// Each returned call has a Type ("function" when the provider gave none) and
// an ID: a call that came without one gets a deterministic id, the same for
// the same call at the same place of the same conversation, and the id is
// written back into resp. salt tells apart the turns of a conversation: pass
// the number of messages the model was sent. [ToolArgValidation],
// [ToolCallLimit] and the agent loop all use it, so they agree on ids.
//
// A returned call shares its FunctionCall with resp; it is nil when the
// provider sent a call without a function.
func ToolCalls(resp *llms.ContentResponse, salt int) []llms.ToolCall {
	return toToolCalls(collectToolCalls(resp, salt))
}

func toToolCalls(calls []toolCall) []llms.ToolCall {
	out := make([]llms.ToolCall, len(calls))
	for i, c := range calls {
		typ := c.typ
		if typ == "" {
			typ = "function"
		}
		out[i] = llms.ToolCall{ID: c.id, Type: typ, FunctionCall: c.fn}
	}
	return out
}

// ToolCallMessages returns the messages that record tool calls and what each
// returned, in a layout OpenAI, Anthropic and Google all accept: for each
// call, in order, one AI message holding that single call followed by one
// tool message whose content is results[i]. The first AI message also
// carries text, the response's text content, when it is not empty.
// [ToolArgValidation] and [ToolCallLimit] replay rejected responses this way; an
// agent loop records executed calls this way.
//
// The layout is shaped by what langchaingo's providers send: the Anthropic
// provider reads only the first part of an AI message, so the tool call comes
// before the text (the text may be dropped there; the call never is), and
// the Anthropic and Google providers refuse a recorded call whose arguments
// are not a JSON object, so such arguments are recorded as {} (the tool
// message, or ToolArgValidation's feedback, says what was wrong with them).
//
// Calls without a function cannot be shown as tool calls: they are reported
// in one human message at the end asking the model to call again, and their
// results are ignored. When no call can be shown, text becomes a plain AI
// message. The messages hold copies of the calls' FunctionCalls.
func ToolCallMessages(text string, calls []llms.ToolCall, results []string) []llms.MessageContent {
	msgs := make([]llms.MessageContent, 0, 2*len(calls)+1)
	broken := 0
	for i, c := range calls {
		if c.FunctionCall == nil {
			broken++
			continue
		}
		fn := *c.FunctionCall
		if !isJSONObject(fn.Arguments) {
			fn.Arguments = "{}"
		}
		typ := c.Type
		if typ == "" {
			typ = "function"
		}
		parts := make([]llms.ContentPart, 1, 2)
		parts[0] = llms.ToolCall{ID: c.ID, Type: typ, FunctionCall: &fn}
		if text != "" {
			parts = append(parts, llms.TextContent{Text: text})
			text = ""
		}
		msgs = append(msgs,
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: c.ID, Name: fn.Name, Content: results[i]},
			}},
		)
	}
	if text != "" {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeAI, text))
	}
	if broken > 0 {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, noFunctionCalls(broken)))
	}
	return msgs
}

// isJSONObject reports whether s is one JSON object (surrounding blanks
// allowed), the only arguments every provider accepts in a recorded call.
func isJSONObject(s string) bool {
	t := strings.TrimSpace(s)
	return len(t) >= 2 && t[0] == '{' && json.Valid([]byte(t))
}

// withReplay returns orig followed by extra, in a new slice: the caller's
// slice is never appended to.
func withReplay(orig, extra []llms.MessageContent) []llms.MessageContent {
	msgs := make([]llms.MessageContent, 0, len(orig)+len(extra))
	msgs = append(msgs, orig...)
	return append(msgs, extra...)
}
