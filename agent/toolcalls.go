package agent

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// toolCall is one tool call of a model response, with its id settled.
type toolCall struct {
	id  string
	typ string
	fn  *llms.FunctionCall // nil when the provider sent a call without a function
}

// collectToolCalls returns the tool calls of every choice of resp, in order:
// providers put them in ToolCalls, Anthropic spreads one response over
// several choices, and a choice with only the legacy FuncCall contributes
// that call. Calls without an id get a deterministic one (see synthesizeID).
// salt is the number of messages the model was sent, as in ToolArgValidation,
// so that both pick the same id for the same call.
func collectToolCalls(resp *llms.ContentResponse, salt int) []toolCall {
	var calls []toolCall
	for _, ch := range resp.Choices {
		if ch == nil {
			continue
		}
		if len(ch.ToolCalls) == 0 {
			if ch.FuncCall != nil {
				calls = append(calls, toolCall{fn: ch.FuncCall})
			}
			continue
		}
		for _, tc := range ch.ToolCalls {
			calls = append(calls, toolCall{id: tc.ID, typ: tc.Type, fn: tc.FunctionCall})
		}
	}
	for i := range calls {
		c := &calls[i]
		if c.typ == "" {
			c.typ = "function"
		}
		if c.id == "" {
			name, args := "", ""
			if c.fn != nil {
				name, args = c.fn.Name, c.fn.Arguments
			}
			c.id = synthesizeID(salt, i, name, args)
		}
	}
	return calls
}

// synthesizeID returns a stable id for a call that came without one: the same
// call at the same place in the same conversation always gets the same id.
// It is the function ToolArgValidation uses, so that the ids agree when both
// have to make one up.
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

// transcript returns the messages recording a response's tool calls and
// what each returned: for each call, in order, one AI message holding that
// single call (the first also carries the response's text) followed by one
// tool message whose content is answers[i]. This is the layout OpenAI,
// Anthropic and Google all accept, and the one ToolArgValidation uses for its
// re-asks.
//
// Calls without a function cannot be shown as tool calls; they are reported
// in one human message at the end, asking the model to call again.
func transcript(text string, calls []toolCall, answers []string) []llms.MessageContent {
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
		parts = append(parts, llms.ToolCall{ID: c.id, Type: c.typ, FunctionCall: &fn})
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
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, noFunctionMessage(broken)))
	}
	return msgs
}

func noFunctionMessage(n int) string {
	return "Your previous response contained " + strconv.Itoa(n) +
		" tool call(s) without a function name; they were not executed. " +
		"Call the tools again, each with its name and a JSON object of arguments."
}
