package httpguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolguard/toolguard/guard"
)

// chatWire is OpenAI Chat Completions (POST …/chat/completions), which
// OpenAI-compatible servers (vLLM, Ollama, OpenRouter, Azure, …) speak too.
// Tool calls are choices[0].message.tool_calls[i], whose
// function.arguments is a JSON text inside a JSON string.
type chatWire struct{}

func (chatWire) name() string { return "openai.chat" }

// recognise: POST …/chat/completions (OpenAI's, Azure's deployments, and
// every OpenAI-compatible server's).
func (chatWire) recognise(method, path string) bool { return postTo(method, path, chatPath) }

func (chatWire) ownsPath(path string) bool { return strings.HasSuffix(path, chatPath) }

// chatPath ends the path of a Chat Completions request.
const chatPath = "/chat/completions"

// parseRequest reads the request. A tool whose parameters encoding/json
// cannot read (nested past its 10,000 levels) gets wireTool.Err, so that it
// costs its own calls only: the other tools are guarded.
func (chatWire) parseRequest(_ string, body []byte) (wireRequest, error) {
	readable, err := readableBody(body, functionSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	req, ok := decodeChatRequest(readable)
	if !ok {
		if req, err = unmarshalRequest[chatRequest](readable); err != nil {
			return wireRequest{}, err
		}
	}
	if req.Messages != '[' {
		return wireRequest{}, fmt.Errorf("%w: chat request without messages", errUnsupported)
	}
	// n > 1 is read: an answer of several choices without tool calls is
	// passed as it is, one whose choices hold tool calls is unguardable
	// (chatMessage).
	out := wireRequest{Model: req.Model, Stream: req.Stream, State: serverState{Stored: req.Store}}
	for _, t := range req.Tools {
		if t.Type != "function" || t.Function == nil {
			continue // custom tools among them: their calls pass as they are
		}
		tool := wireTool{Name: t.Function.Name, Schema: nullToNil(t.Function.Parameters)}
		if isDeepSchema(tool.Schema) {
			tool.Schema, tool.Err = nil, errSchemaTooDeep
		}
		out.Tools = append(out.Tools, tool)
	}
	return ownSchemas(out), nil
}

// chatRequest is what parseRequest reads of a Chat Completions request.
type chatRequest = struct {
	Model    string         `json:"model"`
	Stream   bool           `json:"stream"`
	Messages jsonKind       `json:"messages"`
	Store    bool           `json:"store"`
	Tools    []functionTool `json:"tools"`
}

// decodeChatRequest reads the request body b into a chatRequest by hand;
// ok false to leave it to encoding/json (request_decode.go).
func decodeChatRequest(b []byte) (req chatRequest, ok bool) {
	ok = readRequest(b, func(key string, v int) (int, bool) {
		switch key {
		case "model":
			return requestString(b, v, &req.Model)
		case "stream":
			return requestBool(b, v, &req.Stream)
		case "messages":
			return requestKind(b, v, &req.Messages)
		case "store":
			return requestBool(b, v, &req.Store)
		case "tools":
			return requestSlice(b, v, &req.Tools, decodeFunctionTool)
		}
		return 0, false
	}, "model", "stream", "messages", "store", "tools")
	return req, ok
}

// chatRequestRoot returns the span of a request body's object, read as
// parseRequest reads it (a tool schema nested too deep included).
func chatRequestRoot(body []byte) (span, error) {
	if _, err := readableBody(body, functionSchemas); err != nil {
		return span{}, err
	}
	return root(body)
}

// chatUnguardable is the why of a chat response the guard cannot read.
const chatUnguardable = "unreadable chat completion"

// chatAsUnguardable returns err as an unguardable error (it already is one, or
// wraps one, or it gets why); nil for nil.
func chatAsUnguardable(why string, err error) error {
	if err == nil || isUnguardable(err) {
		return err
	}
	return unguardable(why, err)
}

// chatMessage returns the span of choices[0].message in the response's
// doc, ok false when the response has no choice, or has several of which
// none holds tool calls (text only, which the guard has nothing to check
// in). Several choices of which any holds tool calls are unguardable: the
// guard validates, writes back and re-asks one choice, and would pass the
// others unread.
func chatMessage(b []byte) (d doc, sp span, ok bool, err error) {
	d, r, err := parseDoc(b)
	if err != nil {
		return doc{}, span{}, false, err
	}
	ch, ok, err := d.field(r, "choices")
	if err != nil || !ok || kind(b, ch) == 'n' {
		return d, span{}, false, err
	}
	es, err := d.arrayElems(ch)
	if err != nil || len(es) == 0 {
		return d, span{}, false, err
	}
	if len(es) == 1 {
		sp, ok, err = d.at(es[0], "message")
		return d, sp, ok, err
	}
	for i, e := range es {
		if kind(b, e) != '{' {
			continue
		}
		m, ok, err := d.field(e, "message")
		if err != nil {
			return d, span{}, false, err
		}
		if !ok || kind(b, m) != '{' {
			continue
		}
		if calls, err := chatHoldsCalls(d, m); err != nil {
			return d, span{}, false, err
		} else if calls {
			return d, span{}, false, unguardable("several choices with tool calls", fmt.Errorf("choice %d of %d holds tool calls", i, len(es)))
		}
	}
	return d, span{}, false, nil
}

// chatHoldsCalls reports whether the message at msg holds a tool call or a
// legacy function_call.
func chatHoldsCalls(d doc, msg span) (bool, error) {
	b := d.b
	var f [2]found
	d.fields(msg, []string{"function_call", "tool_calls"}, f[:])
	if fc := f[0]; fc.err != nil || (fc.ok && kind(b, fc.v) != 'n') {
		return fc.ok, fc.err
	}
	tc, ok, err := f[1].v, f[1].ok, f[1].err
	if err != nil || !ok || kind(b, tc) != '[' {
		return ok && kind(b, tc) != 'n', err
	}
	es, err := d.arrayElems(tc)
	return len(es) > 0, err
}

// chatCall is one entry of a message's tool_calls: a function call, or a
// custom (freeform) tool call, whose input the guard passes as it is.
type chatCall struct {
	sp     span
	custom bool
}

// chatToolCalls returns the message's tool calls, in order: function calls
// (type "function", or none) and custom calls (type "custom"). A legacy
// function_call, or a tool call of any other type, is unguardable: the
// guard could neither check it nor answer it in a re-ask.
func chatToolCalls(d doc, msg span) ([]chatCall, error) {
	b := d.b
	var f [2]found
	d.fields(msg, []string{"function_call", "tool_calls"}, f[:])
	if fc := f[0]; fc.err != nil {
		return nil, fc.err
	} else if fc.ok && kind(b, fc.v) != 'n' {
		return nil, unguardable("legacy function_call", errors.New("message.function_call"))
	}
	tc, ok, err := f[1].v, f[1].ok, f[1].err
	if err != nil || !ok || kind(b, tc) == 'n' {
		return nil, err
	}
	es, err := d.arrayElems(tc)
	if err != nil {
		return nil, err
	}
	out := make([]chatCall, len(es))
	for i, e := range es {
		if kind(b, e) != '{' {
			return nil, fmt.Errorf("%w: tool call %d is not an object", errJSON, i)
		}
		typ, err := d.optStr(e, "type")
		if err != nil {
			return nil, err
		}
		switch typ {
		case "function", "":
		case "custom":
			out[i].custom = true
		default:
			return nil, unguardable("tool call of an unknown type", fmt.Errorf("tool call %d of type %q", i, typ))
		}
		out[i].sp = e
	}
	return out, nil
}

// chatFunctionCalls returns the spans of the response's function calls, in
// order (custom calls left out), and the response's doc; none when it has
// no message.
func chatFunctionCalls(b []byte) (doc, []span, error) {
	d, msg, ok, err := chatMessage(b)
	if err != nil || !ok {
		return d, nil, err
	}
	tcs, err := chatToolCalls(d, msg)
	if err != nil {
		return d, nil, err
	}
	var out []span
	for _, c := range tcs {
		if !c.custom {
			out = append(out, c.sp)
		}
	}
	return d, out, nil
}

// calls returns the function calls only: a custom tool call's input is
// free text that no schema describes, so it passes as it is, is not
// validated and is not counted by the limits; the function calls beside it
// are guarded as usual.
func (chatWire) calls(resp []byte) ([]wireCall, error) {
	out, err := chatCalls(resp)
	return out, chatAsUnguardable(chatUnguardable, err)
}

func chatCalls(resp []byte) ([]wireCall, error) {
	d, tcs, err := chatFunctionCalls(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(tcs))
	for _, tc := range tcs {
		var f [2]found
		d.fields(tc, []string{"id", "function"}, f[:])
		id, err := d.foundStr(f[0])
		if err != nil {
			return nil, err
		}
		fn, ok, err := f[1].v, f[1].ok, f[1].err
		if err != nil {
			return nil, err
		}
		if !ok || kind(resp, fn) != '{' {
			return nil, fmt.Errorf("%w: tool call without function", errJSON)
		}
		d.fields(fn, []string{"name", "arguments"}, f[:])
		name, err := d.foundStr(f[0])
		if err != nil {
			return nil, err
		}
		args, err := d.foundStr(f[1])
		if err != nil {
			return nil, err
		}
		out = append(out, wireCall{ID: id, Name: name, Args: []byte(args)})
	}
	return out, nil
}

// accept writes args[i] into the i-th function call (custom calls are not
// counted).
func (chatWire) accept(resp []byte, args [][]byte) ([]byte, error) {
	d, tcs, err := chatFunctionCalls(resp)
	if err != nil {
		return nil, chatAsUnguardable(chatUnguardable, err)
	}
	if err := checkArgs(args, len(tcs)); err != nil {
		return nil, err
	}
	var edits []edit
	for i, a := range args {
		if a == nil {
			continue
		}
		v, ok, err := d.at(tcs[i], "function", "arguments")
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

// customNotRun is the tool message a re-ask gives a custom tool call of
// the replayed turn: OpenAI refuses an assistant turn whose tool calls do
// not each have their tool message, and the call was not run.
const customNotRun = "Not run: another tool call of this turn had invalid arguments. Call this tool again if it is still needed."

// chatMessages returns the messages of a Chat request req, the
// conversation a re-ask appends to.
func chatMessages(req []byte) (span, error) {
	r, err := chatRequestRoot(req)
	if err != nil {
		return span{}, err
	}
	return requestList(req, r, "messages")
}

// chatToolMessage is the tool message that answers the call id with
// content.
func chatToolMessage(id, content string) ([]byte, error) {
	return marshal(struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		Content    string `json:"content"`
	}{"tool", id, content})
}

// reask replays resp's message whole, custom calls included (the turn as
// the model wrote it), and answers each of its tool calls in order: a
// function call with its answer, a custom call with customNotRun.
func (chatWire) reask(req, resp []byte, answers []wireAnswer) ([]byte, error) {
	msgs, err := chatMessages(req)
	if err != nil {
		return nil, err
	}
	d, msg, ok, err := chatMessage(resp)
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: response without a message", errJSON)
	}
	tcs, err := chatToolCalls(d, msg)
	if err != nil {
		return nil, err
	}
	replay, err := chatReplay(resp, msg)
	if err != nil {
		return nil, err
	}
	items := [][]byte{replay}
	next := 0 // the next function call's answer
	for _, c := range tcs {
		id, err := optStr(resp, c.sp, "id")
		if err != nil {
			return nil, err
		}
		content := customNotRun
		if !c.custom {
			if next == len(answers) {
				return nil, fmt.Errorf("httpguard: %d answers for more calls", len(answers))
			}
			content = answers[next].Content
			next++
		}
		m, err := chatToolMessage(id, content)
		if err != nil {
			return nil, err
		}
		items = append(items, m)
	}
	if err := checkAnswers(answers, next); err != nil {
		return nil, err
	}
	return appendToArray(req, msgs, items...)
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
// message a model turn with its function calls (a custom tool call is not
// counted, as the guard does not count it in an answer); system, developer
// and tool messages are neither. A body nested too deep for encoding/json
// (a tool's schema) has its messages read alone.
func (chatWire) transcript(req []byte) []guard.Message {
	var r struct {
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if json.Unmarshal(req, &r) != nil {
		sp, err := chatRequestRoot(req)
		if err != nil {
			return nil
		}
		m, ok, err := field(req, sp, "messages")
		if err != nil || !ok || json.Unmarshal(raw(req, m), &r.Messages) != nil {
			return nil
		}
	}
	out := make([]guard.Message, len(r.Messages))
	for i, m := range r.Messages {
		switch m.Role {
		case "user":
			out[i].Kind = guard.UserTurn
		case "assistant":
			out[i].Kind = guard.ModelTurn
			for _, c := range m.ToolCalls {
				if c.Type != "custom" {
					out[i].Calls = append(out[i].Calls, c.Function.Name)
				}
			}
		}
	}
	return out
}
