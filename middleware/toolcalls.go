package middleware

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// toolCall locates one tool call in a response. Providers put tool calls in
// ToolCalls; Anthropic returns one choice per content block, so the calls of
// one response may be spread over several choices. A choice that only has the
// legacy FuncCall (no ToolCalls) contributes that call too.
type toolCall struct {
	choice int
	index  int                // index in Choices[choice].ToolCalls; -1 for a legacy FuncCall
	fn     *llms.FunctionCall // nil when the provider sent a tool call without a function
	id     string
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
			c := toolCall{choice: ci, index: ti, fn: tc.FunctionCall, id: tc.ID}
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

// responseText joins the non-empty text content of every choice of resp.
func responseText(resp *llms.ContentResponse) string {
	var parts []string
	for _, ch := range resp.Choices {
		if ch != nil && ch.Content != "" {
			parts = append(parts, ch.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// replay builds the messages that show the model its rejected response and
// what became of each tool call: for each call, in order, one AI message
// holding that single call (the first also carries the response's text)
// followed by one tool message whose content is answers[i]. This layout is
// accepted by OpenAI, Anthropic and Google alike.
//
// Calls without a function cannot be shown as tool calls; they are reported
// in one human message at the end (answers[i] for them is ignored).
func replay(resp *llms.ContentResponse, calls []toolCall, answers []string) []llms.MessageContent {
	text := responseText(resp)
	msgs := make([]llms.MessageContent, 0, 2*len(calls)+1)
	broken := 0
	for i, c := range calls {
		if c.fn == nil {
			broken++
			continue
		}
		parts := make([]llms.ContentPart, 0, 2)
		if text != "" {
			parts = append(parts, llms.TextContent{Text: text})
			text = ""
		}
		fn := *c.fn
		parts = append(parts, llms.ToolCall{ID: c.id, Type: "function", FunctionCall: &fn})
		msgs = append(msgs,
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: c.id, Name: c.fn.Name, Content: answers[i]},
			}},
		)
	}
	if text != "" { // no call could be shown: keep the text as the AI turn
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeAI, text))
	}
	if broken > 0 {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman,
			"Your previous response contained "+strconv.Itoa(broken)+
				" tool call(s) without a function name; they were not executed. "+
				"Call the tools again, each with its name and a JSON object of arguments."))
	}
	return msgs
}

// withReplay returns orig followed by extra, in a new slice: the caller's
// slice is never appended to.
func withReplay(orig, extra []llms.MessageContent) []llms.MessageContent {
	msgs := make([]llms.MessageContent, 0, len(orig)+len(extra))
	msgs = append(msgs, orig...)
	return append(msgs, extra...)
}
