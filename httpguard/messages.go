package httpguard

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

// messagesWire is Anthropic Messages (POST …/v1/messages). Tool calls are
// the content blocks of type tool_use, whose input is a JSON object.
type messagesWire struct{}

func (messagesWire) name() string { return "anthropic.messages" }

// recognise: POST …/v1/messages (not …/count_tokens or …/batches).
func (messagesWire) recognise(method, path string) bool {
	return postTo(method, path, messagesPath)
}

func (messagesWire) ownsPath(path string) bool { return strings.HasSuffix(path, messagesPath) }

// messagesPath ends the path of a Messages request.
const messagesPath = "/v1/messages"

func (messagesWire) parseRequest(_ string, body []byte) (wireRequest, error) {
	readable, err := readableBody(body, messagesSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	req, ok := decodeMessagesRequest(readable)
	if !ok {
		if req, err = unmarshalRequest[messagesRequest](readable); err != nil {
			return wireRequest{}, err
		}
	}
	if req.Messages != '[' {
		return wireRequest{}, fmt.Errorf("%w: messages request without messages", errUnsupported)
	}
	out := wireRequest{Model: req.Model, Stream: req.Stream}
	if th := req.Thread; th != nil {
		// A message thread: the server holds the conversation under the
		// response's id (create), or the request continues one.
		out.State.Thread = th.Type
		out.State.PreviousResponseID = th.PreviousMessageID
		if out.State.Thread == "" {
			out.State.Thread = "thread"
		}
	}
	for _, t := range req.Tools {
		// Client tools have no type or type "custom"; server tools
		// (web_search_…, bash_…) are run by Anthropic and have no schema.
		if t.Type != "" && t.Type != "custom" {
			continue
		}
		tool := wireTool{Name: t.Name, Schema: nullToNil(t.InputSchema)}
		if isDeepSchema(tool.Schema) {
			tool.Schema, tool.Err = nil, errSchemaTooDeep
		}
		out.Tools = append(out.Tools, tool)
	}
	return ownSchemas(out), nil
}

// messagesRequest is what parseRequest reads of a Messages request.
type messagesRequest = struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	Messages jsonKind        `json:"messages"`
	Thread   *messagesThread `json:"thread"`
	Tools    []messagesTool  `json:"tools"`
}

// messagesThread is a Messages request's thread.
type messagesThread = struct {
	Type              string `json:"type"`
	PreviousMessageID string `json:"previous_message_id"`
}

// messagesTool is a tool of a Messages request.
type messagesTool = struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// decodeMessagesRequest reads the request body b into a messagesRequest
// by hand; ok false to leave it to encoding/json (request_decode.go).
func decodeMessagesRequest(b []byte) (req messagesRequest, ok bool) {
	ok = readRequest(b, func(key string, v int) (int, bool) {
		switch key {
		case "model":
			return requestString(b, v, &req.Model)
		case "stream":
			return requestBool(b, v, &req.Stream)
		case "messages":
			return requestKind(b, v, &req.Messages)
		case "thread":
			return requestObjectPtr(b, v, &req.Thread, decodeMessagesThread)
		case "tools":
			return requestSlice(b, v, &req.Tools, decodeMessagesTool)
		}
		return 0, false
	}, "model", "stream", "messages", "thread", "tools")
	return req, ok
}

// decodeMessagesThread reads the object at b[at] into th (readRequest).
func decodeMessagesThread(th *messagesThread, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(key string, v int) (int, bool) {
		switch key {
		case "type":
			return requestString(b, v, &th.Type)
		case "previous_message_id":
			return requestString(b, v, &th.PreviousMessageID)
		}
		return 0, false
	}, "type", "previous_message_id")
}

// decodeMessagesTool reads the object at b[at] into t (readRequest).
func decodeMessagesTool(t *messagesTool, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(key string, v int) (int, bool) {
		switch key {
		case "type":
			return requestString(b, v, &t.Type, "custom")
		case "name":
			return requestString(b, v, &t.Name)
		case "input_schema":
			return requestRaw(b, v, &t.InputSchema)
		}
		return 0, false
	}, "type", "name", "input_schema")
}

// messagesSchemas finds a Messages request's tool schemas (readableBody).
func messagesSchemas(b []byte, r span) ([]span, error) {
	return schemasAt(b, r, []string{"tools"}, []string{"input_schema"})
}

// messagesBlockType reports whether typ is a content block type of a
// Messages response,
// the beta API's included (anthropic-sdk-go's ContentBlockUnion and
// BetaContentBlockUnion): tool_use is the client's call, which the guard
// checks; the others are text, reasoning or tools Anthropic runs itself,
// which the client reads but does not run. A block of any other type
// might be a call the guard does not know to check: the answer cannot be
// guarded.
func messagesBlockType(typ string) bool {
	switch typ {
	case "text", "thinking", "redacted_thinking", "tool_use",
		"server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
		"code_execution_tool_result", "bash_code_execution_tool_result",
		"text_editor_code_execution_tool_result", "tool_search_tool_result",
		"container_upload", "advisor_tool_result", "mcp_tool_use",
		"mcp_tool_result", "mcp_tool_listing", "compaction", "fallback":
		return true
	}
	return false
}

// unknownBlock is why an Anthropic answer with a content block of a type
// the guard does not know cannot be guarded.
const unknownBlock = "anthropic content block of an unknown type"

// checkBlockType returns an unguardable error unless typ is a known
// content block type.
func checkBlockType(typ string) error {
	if messagesBlockType(typ) {
		return nil
	}
	return unguardable(unknownBlock, fmt.Errorf("type %.64q", typ))
}

// messagesToolUses returns the spans of resp's content blocks and the
// positions among them of the tool_use blocks; a block of a type it does
// not know is unguardable.
func messagesToolUses(b []byte) (blocks []span, uses []int, err error) {
	_, blocks, uses, err = messagesToolUsesDoc(b)
	return blocks, uses, err
}

// messagesToolUsesDoc is messagesToolUses, with the response's doc.
func messagesToolUsesDoc(b []byte) (d doc, blocks []span, uses []int, err error) {
	d, r, err := parseDoc(b)
	if err != nil {
		return doc{}, nil, nil, err
	}
	c, ok, err := d.field(r, "content")
	if err != nil || !ok || kind(b, c) == 'n' {
		return d, nil, nil, err
	}
	blocks, err = d.arrayElems(c)
	if err != nil {
		return d, nil, nil, err
	}
	for i, bl := range blocks {
		typ, err := d.optStr(bl, "type")
		if err != nil {
			return d, nil, nil, err
		}
		if err := checkBlockType(typ); err != nil {
			return d, nil, nil, err
		}
		if typ == "tool_use" {
			uses = append(uses, i)
		}
	}
	return d, blocks, uses, nil
}

// anthropicUnread is why an Anthropic answer that is not the JSON of the
// protocol cannot be guarded.
const anthropicUnread = "anthropic answer not in the protocol's shape"

func (messagesWire) calls(resp []byte) ([]wireCall, error) {
	out, err := messagesCalls(resp)
	return out, unreadable(anthropicUnread, err)
}

// messagesCalls is messagesWire.calls.
func messagesCalls(resp []byte) ([]wireCall, error) {
	d, blocks, uses, err := messagesToolUsesDoc(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(uses))
	for _, u := range uses {
		var f [3]found
		d.fields(blocks[u], []string{"id", "name", "input"}, f[:])
		id, err := d.foundStr(f[0])
		if err != nil {
			return nil, err
		}
		name, err := d.foundStr(f[1])
		if err != nil {
			return nil, err
		}
		var args []byte
		if in := f[2]; in.err != nil {
			return nil, in.err
		} else if in.ok {
			if args, err = objectArgs(resp, in.v); err != nil {
				return nil, err
			}
		}
		out = append(out, wireCall{ID: id, Name: name, Args: args})
	}
	return out, nil
}

func (messagesWire) accept(resp []byte, args [][]byte) ([]byte, error) {
	blocks, uses, err := messagesToolUses(resp)
	if err != nil {
		return nil, unreadable(anthropicUnread, err)
	}
	return setArgs(resp, args, len(uses), "input", func(i int) span { return blocks[uses[i]] }, nil)
}

func (w messagesWire) reask(req, resp []byte, answers []wireAnswer) ([]byte, error) {
	if _, err := readableBody(req, messagesSchemas); err != nil {
		return nil, err
	}
	r, err := root(req)
	if err != nil {
		return nil, err
	}
	msgs, err := requestList(req, r, "messages")
	if err != nil {
		return nil, err
	}
	blocks, _, err := messagesToolUses(resp)
	if err != nil {
		return nil, err
	}
	calls, err := w.calls(resp)
	if err != nil {
		return nil, err
	}
	if err := checkAnswers(answers, len(calls)); err != nil {
		return nil, err
	}
	// The assistant turn: every block as the response has it (thinking
	// blocks with their signatures, redacted thinking, server tool blocks,
	// tool_use ids), null members left out.
	assistant := []byte(`{"role":"assistant","content":[`)
	for i, bl := range blocks {
		if i > 0 {
			assistant = append(assistant, ',')
		}
		nb, err := dropNulls(resp, bl)
		if err != nil {
			return nil, err
		}
		assistant = append(assistant, nb...)
	}
	assistant = append(assistant, "]}"...)

	type toolResult struct {
		Type      string `json:"type"`
		ToolUseID string `json:"tool_use_id"`
		Content   string `json:"content"`
		IsError   bool   `json:"is_error,omitempty"`
	}
	results := make([]toolResult, len(calls))
	for i, c := range calls {
		results[i] = toolResult{"tool_result", c.ID, answers[i].Content, answers[i].IsError}
	}
	user, err := marshal(struct {
		Role    string       `json:"role"`
		Content []toolResult `json:"content"`
	}{"user", results})
	if err != nil {
		return nil, err
	}
	return appendToArray(req, msgs, assistant, user)
}

// usage counts cached input (cache_creation_input_tokens,
// cache_read_input_tokens) as input, as OpenTelemetry's gen_ai.usage.
// input_tokens asks.
func (messagesWire) usage(resp []byte) (wireUsage, error) {
	var r struct {
		Model string `json:"model"`
		Usage *struct {
			InputTokens   int64 `json:"input_tokens"`
			CacheCreation int64 `json:"cache_creation_input_tokens"`
			CacheRead     int64 `json:"cache_read_input_tokens"`
			OutputTokens  int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := decodeResponse(resp, &r); err != nil {
		return wireUsage{}, err
	}
	u := wireUsage{Model: r.Model}
	if r.Usage != nil {
		u.Reported = true
		u.InputTokens = r.Usage.InputTokens + r.Usage.CacheCreation + r.Usage.CacheRead
		u.OutputTokens = r.Usage.OutputTokens
	}
	return u, nil
}

// anthropicError is the error object of Anthropic's error body and of its
// stream's error event.
type anthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// errorBody is {"type": "error", "error": {"type", "message"}}.
func (messagesWire) errorBody(_ int, typ, msg string) []byte {
	b, _ := marshal(struct {
		Type  string         `json:"type"`
		Error anthropicError `json:"error"`
	}{"error", anthropicError{typ, msg}})
	return b
}

func (messagesWire) newAssembler() assembler { return &messagesAssembler{} }

func (messagesWire) newGate(w io.Writer) streamGate { return newMessagesGate(w) }

// text is the text of the text blocks.
func (messagesWire) text(resp []byte) (string, error) {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := decodeResponse(resp, &r); err != nil {
		return "", err
	}
	var s strings.Builder
	for _, b := range r.Content {
		if b.Type == "text" {
			s.WriteString(b.Text)
		}
	}
	return s.String(), nil
}

func (messagesWire) finish(resp []byte) []string {
	var r struct {
		StopReason string `json:"stop_reason"`
	}
	if decodeResponse(resp, &r) != nil || r.StopReason == "" {
		return nil
	}
	return []string{r.StopReason}
}

func (messagesWire) end(model, text string) []byte {
	b, _ := marshal(map[string]any{
		"id": "msg_toolguard_" + standInID(), "type": "message", "role": "assistant", "model": model,
		"content":     []any{map[string]any{"type": "text", "text": text}},
		"stop_reason": "end_turn", "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 0, "output_tokens": 0},
	})
	return b
}

// transcript reads messages: a user message is a user turn unless it holds
// tool_result blocks (the answers to the model's calls, which Anthropic
// sends as user messages, first in their content, any text after them: the
// turn goes on), an assistant message a model turn with its tool_use
// blocks.
func (messagesWire) transcript(req []byte) []guard.Message {
	var r struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(req, &r) != nil {
		// A tool schema nested too deep for encoding/json: the rest.
		readable, err := readableBody(req, messagesSchemas)
		if err != nil || json.Unmarshal(readable, &r) != nil {
			return nil
		}
	}
	out := make([]guard.Message, len(r.Messages))
	for i, m := range r.Messages {
		var blocks []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		_ = json.Unmarshal(m.Content, &blocks) // a string content has no blocks
		switch m.Role {
		case "user":
			results := false
			for _, b := range blocks {
				results = results || b.Type == "tool_result"
			}
			if !results {
				out[i].Kind = guard.UserTurn
			}
		case "assistant":
			out[i].Kind = guard.ModelTurn
			for _, b := range blocks {
				if b.Type == "tool_use" {
					out[i].Calls = append(out[i].Calls, b.Name)
				}
			}
		}
	}
	return out
}
