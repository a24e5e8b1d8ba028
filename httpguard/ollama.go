package httpguard

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolguard/toolguard/guard"
)

// ollamaWire is Ollama's native chat API (POST …/api/chat), as the Ollama
// server and its Go client (github.com/ollama/ollama/api) speak it. Tool
// calls are message.tool_calls[i].function, whose arguments is a JSON
// object (not a string, as in OpenAI's protocols) and whose id a server
// may leave out (servers before 0.12 send none): a call without an id is
// matched by position and name, as Gemini's are, and no id is ever
// written into what the client reads. A request streams unless its body
// says "stream": false, and a stream is newline-delimited JSON
// (ndjsonFraming), each line a ChatResponse, the last one with "done": true.
type ollamaWire struct{}

func (ollamaWire) name() string { return "ollama.chat" }

func (ollamaWire) recognise(method, path string) bool { return postTo(method, path, ollamaPath) }

func (ollamaWire) ownsPath(path string) bool { return strings.HasSuffix(path, ollamaPath) }

// ollamaPath ends the path of an Ollama chat request.
const ollamaPath = "/api/chat"

// framing: Ollama streams NDJSON.
func (ollamaWire) framing() framing { return ndjsonFraming{} }

// opening: no line only opens an Ollama stream (each carries text, a call
// or the end).
func (ollamaWire) opening(streamEvent) bool { return false }

// parseRequest reads the request: the model, stream (true unless the body
// says false) and the function tools. A tool whose parameters encoding/json
// cannot read (nested past its 10,000 levels) gets wireTool.Err, so that it
// costs its own calls only.
func (ollamaWire) parseRequest(_ string, body []byte) (wireRequest, error) {
	readable, err := readableBody(body, functionSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	req, ok := decodeOllamaChatRequest(readable)
	if !ok {
		if req, err = unmarshalRequest[ollamaChatRequest](readable); err != nil {
			return wireRequest{}, err
		}
	}
	if req.Messages != '[' {
		return wireRequest{}, fmt.Errorf("%w: ollama chat request without messages", errUnsupported)
	}
	out := wireRequest{Model: req.Model, Stream: req.Stream == nil || *req.Stream}
	for _, t := range req.Tools {
		if (t.Type != "function" && t.Type != "") || t.Function == nil {
			continue
		}
		tool := wireTool{Name: t.Function.Name}
		if p := t.Function.Parameters; len(p) > 0 && string(p) != "null" {
			tool.Schema = p
		}
		if isDeepSchema(tool.Schema) {
			tool.Schema, tool.Err = nil, errSchemaTooDeep
		}
		out.Tools = append(out.Tools, tool)
	}
	return ownSchemas(out), nil
}

// ollamaChatRequest is what parseRequest reads of an Ollama chat request.
type ollamaChatRequest = struct {
	Model    string         `json:"model"`
	Stream   *bool          `json:"stream"`
	Messages jsonKind       `json:"messages"`
	Tools    []functionTool `json:"tools"`
}

// decodeOllamaChatRequest reads the request body b into an
// ollamaChatRequest by hand; ok false to leave it to encoding/json
// (request_decode.go).
func decodeOllamaChatRequest(b []byte) (req ollamaChatRequest, ok bool) {
	ok = readRequest(b, func(key string, v int) (int, bool) {
		switch key {
		case "model":
			return requestString(b, v, &req.Model)
		case "stream":
			return requestBoolPtr(b, v, &req.Stream)
		case "messages":
			return requestKind(b, v, &req.Messages)
		case "tools":
			return requestSlice(b, v, &req.Tools, decodeFunctionTool)
		}
		return 0, false
	}, "model", "stream", "messages", "tools")
	return req, ok
}

// ollamaUnread is why an Ollama answer that is not the JSON of the
// protocol cannot be guarded.
const ollamaUnread = "ollama answer not in the protocol's shape"

// ollamaMessage returns the span of the response's message; ok is false
// when it has none (or null).
func ollamaMessage(b []byte) (sp span, ok bool, err error) {
	_, sp, ok, err = ollamaMessageDoc(b)
	return sp, ok, err
}

// ollamaMessageDoc is ollamaMessage, with the response's doc.
func ollamaMessageDoc(b []byte) (d doc, sp span, ok bool, err error) {
	d, r, err := parseDoc(b)
	if err != nil {
		return doc{}, span{}, false, err
	}
	m, ok, err := d.field(r, "message")
	if err != nil || !ok || kind(b, m) == 'n' {
		return d, span{}, false, err
	}
	if kind(b, m) != '{' {
		return d, span{}, false, fmt.Errorf("%w: message is not an object", errJSON)
	}
	return d, m, true, nil
}

// ollamaToolCalls returns the spans of the message's tool calls, in order.
func ollamaToolCalls(b []byte, msg span) ([]span, error) { return ollamaToolCallsDoc(doc{b: b}, msg) }

func ollamaToolCallsDoc(d doc, msg span) ([]span, error) {
	b := d.b
	tc, ok, err := d.field(msg, "tool_calls")
	if err != nil || !ok || kind(b, tc) == 'n' {
		return nil, err
	}
	es, err := d.arrayElems(tc)
	if err != nil {
		return nil, err
	}
	for i, e := range es {
		if kind(b, e) != '{' {
			return nil, fmt.Errorf("%w: tool call %d is not an object", errJSON, i)
		}
	}
	return es, nil
}

// ollamaFunctions returns the function span of each of the response's
// tool calls, in order, and each call's id ("" when it has none), and the
// response's doc.
func ollamaFunctions(b []byte) (d doc, fns []span, ids []string, err error) {
	d, msg, ok, err := ollamaMessageDoc(b)
	if err != nil || !ok {
		return d, nil, nil, err
	}
	tcs, err := ollamaToolCallsDoc(d, msg)
	if err != nil {
		return d, nil, nil, err
	}
	for i, tc := range tcs {
		var f [2]found
		d.fields(tc, []string{"id", "function"}, f[:])
		id, err := d.foundStr(f[0])
		if err != nil {
			return d, nil, nil, err
		}
		fn, ok, err := f[1].v, f[1].ok, f[1].err
		if err != nil {
			return d, nil, nil, err
		}
		if !ok || kind(b, fn) != '{' {
			return d, nil, nil, fmt.Errorf("%w: tool call %d without function", errJSON, i)
		}
		fns, ids = append(fns, fn), append(ids, id)
	}
	return d, fns, ids, nil
}

func (ollamaWire) calls(resp []byte) ([]wireCall, error) {
	out, err := ollamaCalls(resp)
	return out, unreadable(ollamaUnread, err)
}

// ollamaCalls is ollamaWire.calls.
func ollamaCalls(resp []byte) ([]wireCall, error) {
	d, fns, ids, err := ollamaFunctions(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(fns))
	for i, fn := range fns {
		c, err := ollamaFunctionDoc(d, fn)
		if err != nil {
			return nil, err
		}
		c.ID = ids[i]
		out = append(out, c)
	}
	return out, nil
}

// ollamaFunction reads the function at fn of b: its name and arguments.
func ollamaFunction(b []byte, fn span) (wireCall, error) { return ollamaFunctionDoc(doc{b: b}, fn) }

func ollamaFunctionDoc(d doc, fn span) (wireCall, error) {
	var f [2]found
	d.fields(fn, []string{"name", "arguments"}, f[:])
	name, err := d.foundStr(f[0])
	if err != nil {
		return wireCall{}, err
	}
	var args []byte
	if a := f[1]; a.err != nil {
		return wireCall{}, a.err
	} else if a.ok && kind(d.b, a.v) != 'n' {
		if args, err = objectArgs(d.b, a.v); err != nil {
			return wireCall{}, err
		}
	}
	return wireCall{Name: name, Args: args}, nil
}

// accept writes args[i] as the i-th call's arguments object.
func (ollamaWire) accept(resp []byte, args [][]byte) ([]byte, error) {
	_, fns, _, err := ollamaFunctions(resp)
	if err != nil {
		return nil, unreadable(ollamaUnread, err)
	}
	return setArgs(resp, args, len(fns), "arguments", func(i int) span { return fns[i] }, compact)
}

// ollamaToolMessage is the tool message that answers one call: its result
// as content, the tool's name (what Ollama's templates read), and the
// call's id when it had one.
type ollamaToolMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolName   string `json:"tool_name"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// reask appends resp's message as it came (content, thinking, tool_calls
// with their ids) and one tool message per call, in order. Ollama has no
// error flag on a tool message: a refusal is its text.
func (w ollamaWire) reask(req, resp []byte, answers []wireAnswer) ([]byte, error) {
	if _, err := readableBody(req, functionSchemas); err != nil {
		return nil, err
	}
	r, err := root(req)
	if err != nil {
		return nil, err
	}
	msgs, ok, err := requestField(req, r, "messages")
	if err != nil || !ok || kind(req, msgs) != '[' {
		return nil, fmt.Errorf("%w: request without messages", errJSON)
	}
	msg, ok, err := ollamaMessage(resp)
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
	turn := raw(resp, msg)
	if role, err := optStr(resp, msg, "role"); err != nil {
		return nil, err
	} else if role == "" {
		if turn, err = setAt(turn, nil, "role", []byte(`"assistant"`)); err != nil {
			return nil, err
		}
	}
	items := [][]byte{turn}
	for i, c := range calls {
		m, err := marshal(ollamaToolMessage{"tool", answers[i].Content, c.Name, c.ID})
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

// usage reads prompt_eval_count (input) and eval_count (output), which
// Ollama reports on a sync answer and on a stream's last line.
func (ollamaWire) usage(resp []byte) (wireUsage, error) {
	var r struct {
		Model           string `json:"model"`
		PromptEvalCount *int64 `json:"prompt_eval_count"`
		EvalCount       *int64 `json:"eval_count"`
	}
	if err := decodeResponse(resp, &r); err != nil {
		return wireUsage{}, err
	}
	u := wireUsage{Model: r.Model}
	if r.PromptEvalCount != nil || r.EvalCount != nil {
		u.Reported = true
		if r.PromptEvalCount != nil {
			u.InputTokens = *r.PromptEvalCount
		}
		if r.EvalCount != nil {
			u.OutputTokens = *r.EvalCount
		}
	}
	return u, nil
}

// errorBody is Ollama's error shape, {"error": "…"}: one string, which
// its Go client surfaces as api.StatusError's ErrorMessage (and, inside a
// stream, as the error Chat returns). The type has no member of its own
// there, so it leads the message: "invalid_tool_calls: …".
func (ollamaWire) errorBody(_ int, typ, msg string) []byte {
	b, _ := marshal(struct {
		Error string `json:"error"`
	}{typ + ": " + msg})
	return b
}

func (ollamaWire) newAssembler() assembler { return &ollamaAssembler{} }

// newGate hands the gate w in NDJSON framing: writeEvent formats
// server-sent events for a writer that takes bytes.
func (ollamaWire) newGate(w io.Writer) streamGate { return newOllamaGate(framed(w, ndjsonFraming{})) }

// text is the message's content (not its thinking).
func (ollamaWire) text(resp []byte) (string, error) {
	msg, ok, err := ollamaMessage(resp)
	if err != nil || !ok {
		return "", err
	}
	return optStr(resp, msg, "content")
}

// finish is done_reason ("stop", "length", "load", "unload").
func (ollamaWire) finish(resp []byte) []string {
	var r struct {
		DoneReason string `json:"done_reason"`
	}
	if decodeResponse(resp, &r) != nil || r.DoneReason == "" {
		return nil
	}
	return []string{r.DoneReason}
}

// end is a final ChatResponse as the server sends it, members in its
// order, with counts of 0.
func (ollamaWire) end(model, text string) []byte {
	b, _ := marshal(struct {
		Model           string            `json:"model"`
		CreatedAt       string            `json:"created_at"`
		Message         ollamaMessageJSON `json:"message"`
		DoneReason      string            `json:"done_reason"`
		Done            bool              `json:"done"`
		PromptEvalCount int               `json:"prompt_eval_count"`
		EvalCount       int               `json:"eval_count"`
	}{model, time.Now().UTC().Format(time.RFC3339Nano), ollamaMessageJSON{Role: "assistant", Content: text}, "stop", true, 0, 0})
	return b
}

// transcript reads messages: a user message is a user turn, an assistant
// message a model turn with its tool calls; system and tool messages are
// neither. Ollama lower-cases the role it reads, and so does this. A body
// nested too deep for encoding/json (a tool's schema) has its messages
// read alone.
func (ollamaWire) transcript(req []byte) []guard.Message {
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
		readable, err := readableBody(req, functionSchemas)
		if err != nil || json.Unmarshal(readable, &r) != nil {
			return nil
		}
	}
	out := make([]guard.Message, len(r.Messages))
	for i, m := range r.Messages {
		switch strings.ToLower(m.Role) {
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
