package httpguard

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

// bedrockWire is Amazon Bedrock's Converse API (POST …/model/{modelId}/converse
// and …/model/{modelId}/converse-stream, the model id URL-escaped: an ARN
// holds ':' and '/'). A request carries messages[].content[] blocks, each
// an object of one member naming its kind (text, toolUse, toolResult,
// image, …), and its tools as toolConfig.tools[].toolSpec with the schema
// at inputSchema.json. The answer is output.message, whose toolUse blocks
// ({toolUseId, name, input}, input a JSON object) are the calls; a toolUse
// of type server_tool_use is a tool Bedrock runs itself. The stream is an
// AWS event stream (eventstream.go, bedrock_stream.go). Requests are signed
// with SigV4 over their body: a re-ask is signed again (signing.go).
type bedrockWire struct{}

func (bedrockWire) name() string { return "aws.bedrock.converse" }

// recognise: POST …/model/{modelId}/converse or …/converse-stream.
func (w bedrockWire) recognise(method, path string) bool {
	return method == http.MethodPost && w.ownsPath(path)
}

func (bedrockWire) ownsPath(path string) bool {
	_, _, ok := bedrockPath(path)
	return ok
}

// framing: ConverseStream is an AWS event stream (eventstream.go).
func (bedrockWire) framing() framing { return awsEventStream{} }

// opening: messageStart, and a toolUse block's start, which reaches the
// client only with its call, carry nothing of the answer.
func (bedrockWire) opening(ev streamEvent) bool {
	return ev.Event == "messageStart" || ev.Event == "contentBlockStart"
}

// bedrockPath returns the model id of a Converse path and whether it
// streams; ok is false for any other path. The path is the URL's, decoded:
// an ARN's '/' stays in the model id.
func bedrockPath(path string) (model string, stream, ok bool) {
	var rest string
	switch {
	case strings.HasSuffix(path, "/converse"):
		rest = strings.TrimSuffix(path, "/converse")
	case strings.HasSuffix(path, "/converse-stream"):
		rest, stream = strings.TrimSuffix(path, "/converse-stream"), true
	default:
		return "", false, false
	}
	i := strings.Index(rest, "/model/")
	if i < 0 || i+len("/model/") == len(rest) {
		return "", false, false
	}
	return rest[i+len("/model/"):], stream, true
}

func (bedrockWire) parseRequest(path string, body []byte) (wireRequest, error) {
	model, stream, ok := bedrockPath(path)
	if !ok {
		return wireRequest{}, fmt.Errorf("%w: not a Converse path", errUnsupported)
	}
	readable, err := readableBody(body, bedrockSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	req, ok := decodeBedrockConverseRequest(readable)
	if !ok {
		if req, err = unmarshalRequest[bedrockConverseRequest](readable); err != nil {
			return wireRequest{}, err
		}
	}
	if req.Messages != '[' {
		return wireRequest{}, fmt.Errorf("%w: converse request without messages", errUnsupported)
	}
	out := wireRequest{Model: model, Stream: stream}
	if req.ToolConfig == nil {
		return out, nil
	}
	for _, t := range req.ToolConfig.Tools {
		// Other members of the union (cachePoint, systemTool) are not
		// tools the client runs.
		if t.ToolSpec == nil {
			continue
		}
		tool := wireTool{Name: t.ToolSpec.Name}
		if s := t.ToolSpec.InputSchema; s != nil && len(s.JSON) > 0 && string(s.JSON) != "null" {
			tool.Schema = s.JSON
		}
		if isDeepSchema(tool.Schema) {
			tool.Schema, tool.Err = nil, errSchemaTooDeep
		}
		out.Tools = append(out.Tools, tool)
	}
	return ownSchemas(out), nil
}

// bedrockConverseRequest is what parseRequest reads of a Converse
// request.
type bedrockConverseRequest = struct {
	Messages   jsonKind           `json:"messages"`
	ToolConfig *bedrockToolConfig `json:"toolConfig"`
}

// bedrockToolConfig is a Converse request's toolConfig.
type bedrockToolConfig = struct {
	Tools []bedrockTool `json:"tools"`
}

// bedrockTool is a member of toolConfig.tools, a union of which toolSpec
// is the tool the client runs.
type bedrockTool = struct {
	ToolSpec *bedrockToolSpec `json:"toolSpec"`
}

// bedrockToolSpec is a tool the client runs, and its schema.
type bedrockToolSpec = struct {
	Name        string              `json:"name"`
	InputSchema *bedrockInputSchema `json:"inputSchema"`
}

// bedrockInputSchema is a toolSpec's inputSchema, whose json is the JSON
// Schema.
type bedrockInputSchema = struct {
	JSON json.RawMessage `json:"json"`
}

// decodeBedrockConverseRequest reads the request body b into a
// bedrockConverseRequest by hand; ok false to leave it to encoding/json
// (request_decode.go).
func decodeBedrockConverseRequest(b []byte) (req bedrockConverseRequest, ok bool) {
	ok = readRequest(b, func(key string, v int) (int, bool) {
		switch key {
		case "messages":
			return requestKind(b, v, &req.Messages)
		case "toolConfig":
			return requestObjectPtr(b, v, &req.ToolConfig, decodeBedrockToolConfig)
		}
		return 0, false
	}, "messages", "toolConfig")
	return req, ok
}

// decodeBedrockToolConfig reads the object at b[at] into c (readRequest).
func decodeBedrockToolConfig(c *bedrockToolConfig, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(_ string, v int) (int, bool) {
		return requestSlice(b, v, &c.Tools, decodeBedrockTool)
	}, "tools")
}

// decodeBedrockTool reads the object at b[at] into t (readRequest).
func decodeBedrockTool(t *bedrockTool, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(_ string, v int) (int, bool) {
		return requestObjectPtr(b, v, &t.ToolSpec, decodeBedrockToolSpec)
	}, "toolSpec")
}

// decodeBedrockToolSpec reads the object at b[at] into s (readRequest).
func decodeBedrockToolSpec(s *bedrockToolSpec, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(key string, v int) (int, bool) {
		switch key {
		case "name":
			return requestString(b, v, &s.Name)
		case "inputSchema":
			return requestObjectPtr(b, v, &s.InputSchema, decodeBedrockInputSchema)
		}
		return 0, false
	}, "name", "inputSchema")
}

// decodeBedrockInputSchema reads the object at b[at] into s (readRequest).
func decodeBedrockInputSchema(s *bedrockInputSchema, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(_ string, v int) (int, bool) {
		return requestRaw(b, v, &s.JSON)
	}, "json")
}

// bedrockSchemas finds a Converse request's tool schemas (readableBody):
// toolConfig.tools[].toolSpec.inputSchema.json.
func bedrockSchemas(b []byte, r span) ([]span, error) {
	cfgs, err := matchingMembers(b, r, "toolConfig")
	if err != nil {
		return nil, err
	}
	var out []span
	for _, c := range cfgs {
		tools, err := matchingMembers(b, c, "tools")
		if err != nil {
			return nil, err
		}
		es, err := elems(b, tools)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			specs, err := matchingMembers(b, e, "toolSpec")
			if err != nil {
				return nil, err
			}
			for _, s := range specs {
				in, err := matchingMembers(b, s, "inputSchema")
				if err != nil {
					return nil, err
				}
				for _, i := range in {
					js, err := matchingMembers(b, i, "json")
					if err != nil {
						return nil, err
					}
					out = append(out, js...)
				}
			}
		}
	}
	return out, nil
}

// bedrockBlockKind reports whether k names a member of Converse's
// ContentBlock union (aws-sdk-go-v2's types.ContentBlock): toolUse is the
// client's call (or, typed server_tool_use, Bedrock's own); the others are
// text, reasoning, media, or results the client reads but does not run. A
// block of any other kind might be a call the guard does not know to
// check: the answer cannot be guarded.
func bedrockBlockKind(k string) bool {
	switch k {
	case "text", "toolUse", "toolResult", "reasoningContent", "citationsContent",
		"image", "document", "video", "audio", "guardContent", "searchResult",
		"cachePoint", "toolAddition", "toolRemoval":
		return true
	}
	return false
}

// Why a Bedrock answer cannot be guarded (unguardableError's why).
const (
	bedrockUnread       = "bedrock answer not in the protocol's shape"
	bedrockUnknownBlock = "bedrock content block of an unknown kind"
)

// bedrockBlock is one content block of an answer: its kind and the span
// of its value (for toolUse, the ToolUseBlock object).
type bedrockBlock struct {
	kind string
	v    span
}

// bedrockContent returns the blocks of resp's output.message and the
// positions among them of the client's toolUse blocks; a block of a kind
// it does not know, or of two kinds, is unguardable.
func bedrockContent(resp []byte) (blocks []bedrockBlock, uses []int, err error) {
	_, blocks, uses, err = bedrockContentDoc(resp)
	return blocks, uses, err
}

// bedrockContentDoc is bedrockContent, with the response's doc.
func bedrockContentDoc(resp []byte) (d doc, blocks []bedrockBlock, uses []int, err error) {
	d, r, err := parseDoc(resp)
	if err != nil {
		return doc{}, nil, nil, err
	}
	c, ok, err := bedrockAt(d, r, "output", "message", "content")
	if err != nil || !ok || kind(resp, c) == 'n' {
		return d, nil, nil, err
	}
	es, err := d.arrayElems(c)
	if err != nil {
		return d, nil, nil, err
	}
	for i, e := range es {
		bl, err := bedrockBlockOfDoc(d, e)
		if err != nil {
			return d, nil, nil, err
		}
		blocks = append(blocks, bl)
		if bl.kind != "toolUse" {
			continue
		}
		typ, err := d.optStr(bl.v, "type")
		if err != nil {
			return d, nil, nil, err
		}
		if typ != "server_tool_use" {
			uses = append(uses, i)
		}
	}
	return d, blocks, uses, nil
}

// bedrockAt follows keys from the object at sp, each read by the rule of
// keys.go (field); ok is false when one is missing or null.
func bedrockAt(d doc, sp span, keys ...string) (v span, ok bool, err error) {
	v = sp
	for _, k := range keys {
		if kind(d.b, v) != '{' {
			return span{}, false, fmt.Errorf("%w: %s of a non-object", errJSON, k)
		}
		if v, ok, err = d.field(v, k); err != nil || !ok || kind(d.b, v) == 'n' {
			return span{}, false, err
		}
	}
	return v, true, nil
}

// bedrockBlockOf reads one content block: an object whose one member
// names its kind.
func bedrockBlockOf(b []byte, e span) (bedrockBlock, error) { return bedrockBlockOfDoc(doc{b: b}, e) }

func bedrockBlockOfDoc(d doc, e span) (bedrockBlock, error) {
	b := d.b
	if kind(b, e) != '{' {
		return bedrockBlock{}, fmt.Errorf("%w: content block not an object", errJSON)
	}
	ms, err := d.objectMembers(e)
	if err != nil {
		return bedrockBlock{}, err
	}
	var bl bedrockBlock
	for _, m := range ms {
		if kind(b, m.v) == 'n' {
			continue // an unset member of the union
		}
		if !bedrockBlockKind(m.key) {
			if strings.EqualFold(m.key, "toolUse") {
				return bedrockBlock{}, keyCase(m.key)
			}
			return bedrockBlock{}, unguardable(bedrockUnknownBlock, fmt.Errorf("kind %.64q", m.key))
		}
		if bl.kind != "" {
			return bedrockBlock{}, unguardable(bedrockUnread, fmt.Errorf("a content block of two kinds, %q and %q", bl.kind, m.key))
		}
		bl = bedrockBlock{kind: m.key, v: m.v}
	}
	if bl.kind == "" {
		return bedrockBlock{}, unguardable(bedrockUnread, fmt.Errorf("an empty content block"))
	}
	if bl.kind == "toolUse" && kind(b, bl.v) != '{' {
		return bedrockBlock{}, fmt.Errorf("%w: toolUse not an object", errJSON)
	}
	return bl, nil
}

func (bedrockWire) calls(resp []byte) ([]wireCall, error) {
	out, err := bedrockCalls(resp)
	return out, unreadable(bedrockUnread, err)
}

// bedrockCalls is bedrockWire.calls.
func bedrockCalls(resp []byte) ([]wireCall, error) {
	d, blocks, uses, err := bedrockContentDoc(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(uses))
	for _, u := range uses {
		c, err := bedrockCallDoc(d, blocks[u].v)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// bedrockCall reads the call of the ToolUseBlock at v.
func bedrockCall(resp []byte, v span) (wireCall, error) { return bedrockCallDoc(doc{b: resp}, v) }

func bedrockCallDoc(d doc, v span) (wireCall, error) {
	resp := d.b
	var f [3]found
	d.fields(v, []string{"toolUseId", "name", "input"}, f[:])
	id, err := d.foundStr(f[0])
	if err != nil {
		return wireCall{}, err
	}
	name, err := d.foundStr(f[1])
	if err != nil {
		return wireCall{}, err
	}
	var args []byte
	if in := f[2]; in.err != nil {
		return wireCall{}, in.err
	} else if in.ok {
		if kind(resp, in.v) == '"' {
			// A stream's input that is not JSON, assembled as its text.
			s, err := str(resp, in.v)
			if err != nil {
				return wireCall{}, err
			}
			args = []byte(s)
		} else {
			args = raw(resp, in.v)
		}
	}
	return wireCall{ID: id, Name: name, Args: args}, nil
}

func (bedrockWire) accept(resp []byte, args [][]byte) ([]byte, error) {
	blocks, uses, err := bedrockContent(resp)
	if err != nil {
		return nil, unreadable(bedrockUnread, err)
	}
	return setArgs(resp, args, len(uses), "input", func(i int) span { return blocks[uses[i]].v }, nil)
}

// reask appends to the request's messages the answer's output.message as
// it came (reasoning blocks with their signatures, toolUse ids, server
// tool blocks) and one user message of toolResult blocks, one per call in
// order, each {toolUseId, content: [{text}]} with status "error" for a
// refused call.
func (w bedrockWire) reask(req, resp []byte, answers []wireAnswer) ([]byte, error) {
	if _, err := readableBody(req, bedrockSchemas); err != nil {
		return nil, err
	}
	r, err := root(req)
	if err != nil {
		return nil, err
	}
	msgs, ok, err := requestField(req, r, "messages")
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: request without messages", errJSON)
	}
	rr, err := parseBody(resp)
	if err != nil {
		return nil, err
	}
	message, ok, err := bedrockAt(doc{b: resp}, rr, "output", "message")
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: answer without output.message", errJSON)
	}
	calls, err := w.calls(resp)
	if err != nil {
		return nil, err
	}
	if len(answers) != len(calls) {
		return nil, fmt.Errorf("httpguard: %d answers for %d calls", len(answers), len(calls))
	}
	user, err := bedrockToolResults(calls, answers)
	if err != nil {
		return nil, err
	}
	e, err := appendElems(req, msgs, raw(resp, message), user)
	if err != nil {
		return nil, err
	}
	return apply(req, e), nil
}

// bedrockToolResults is the user message of a re-ask: one toolResult
// block per call, in order, {toolUseId, content: [{text}]}, with status
// "error" for a refused call.
func bedrockToolResults(calls []wireCall, answers []wireAnswer) ([]byte, error) {
	type textBlock struct {
		Text string `json:"text"`
	}
	type toolResult struct {
		ToolUseID string      `json:"toolUseId"`
		Content   []textBlock `json:"content"`
		Status    string      `json:"status,omitempty"`
	}
	type resultBlock struct {
		ToolResult toolResult `json:"toolResult"`
	}
	results := make([]resultBlock, len(calls))
	for i, c := range calls {
		tr := toolResult{ToolUseID: c.ID, Content: []textBlock{{answers[i].Content}}}
		if answers[i].IsError {
			tr.Status = "error"
		}
		results[i] = resultBlock{tr}
	}
	return marshal(struct {
		Role    string        `json:"role"`
		Content []resultBlock `json:"content"`
	}{"user", results})
}

// usage counts cached input (cacheReadInputTokens,
// cacheWriteInputTokens) as input, as OpenTelemetry's
// gen_ai.usage.input_tokens asks. The answer names no model: the
// request's path does.
func (bedrockWire) usage(resp []byte) (wireUsage, error) {
	var r struct {
		Usage *struct {
			InputTokens  int64 `json:"inputTokens"`
			OutputTokens int64 `json:"outputTokens"`
			CacheRead    int64 `json:"cacheReadInputTokens"`
			CacheWrite   int64 `json:"cacheWriteInputTokens"`
		} `json:"usage"`
	}
	if err := decodeResponse(resp, &r); err != nil {
		return wireUsage{}, err
	}
	var u wireUsage
	if r.Usage != nil {
		u.Reported = true
		u.InputTokens = r.Usage.InputTokens + r.Usage.CacheRead + r.Usage.CacheWrite
		u.OutputTokens = r.Usage.OutputTokens
	}
	return u, nil
}

// errorBody is {"__type": typ, "message": msg}: Bedrock's error body is
// {"message"} with the type in the x-amzn-ErrorType header, and the AWS
// SDK reads the type from the body's __type when that header is absent,
// so the program reads an API error whose ErrorCode() is typ.
func (bedrockWire) errorBody(_ int, typ, msg string) []byte {
	b, _ := marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{typ, msg})
	return b
}

// text is the text of the text blocks.
func (bedrockWire) text(resp []byte) (string, error) {
	var r struct {
		Output struct {
			Message struct {
				Content []struct {
					Text *string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		} `json:"output"`
	}
	if err := decodeResponse(resp, &r); err != nil {
		return "", err
	}
	var s strings.Builder
	for _, b := range r.Output.Message.Content {
		if b.Text != nil {
			s.WriteString(*b.Text)
		}
	}
	return s.String(), nil
}

func (bedrockWire) finish(resp []byte) []string {
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if decodeResponse(resp, &r) != nil || r.StopReason == "" {
		return nil
	}
	return []string{r.StopReason}
}

func (bedrockWire) end(_, text string) []byte {
	b, _ := marshal(map[string]any{
		"output": map[string]any{"message": map[string]any{
			"role": "assistant", "content": []any{map[string]any{"text": text}}}},
		"stopReason": "end_turn",
		"usage":      map[string]int{"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
		"metrics":    map[string]int{"latencyMs": 0},
	})
	return b
}

// transcript reads messages: a user message is a user turn unless it holds
// toolResult blocks (the answers to the model's calls, sent as a user
// message: the turn goes on), an assistant message a model turn with its
// toolUse blocks.
func (bedrockWire) transcript(req []byte) []guard.Message {
	var r struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				ToolUse *struct {
					Name string `json:"name"`
					Type string `json:"type"`
				} `json:"toolUse"`
				ToolResult json.RawMessage `json:"toolResult"`
			} `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(req, &r) != nil {
		// A tool schema nested too deep for encoding/json: the rest.
		readable, err := readableBody(req, bedrockSchemas)
		if err != nil || json.Unmarshal(readable, &r) != nil {
			return nil
		}
	}
	out := make([]guard.Message, len(r.Messages))
	for i, m := range r.Messages {
		switch m.Role {
		case "user":
			results := false
			for _, b := range m.Content {
				results = results || len(b.ToolResult) > 0
			}
			if !results {
				out[i].Kind = guard.UserTurn
			}
		case "assistant":
			out[i].Kind = guard.ModelTurn
			for _, b := range m.Content {
				if b.ToolUse != nil && b.ToolUse.Type != "server_tool_use" {
					out[i].Calls = append(out[i].Calls, b.ToolUse.Name)
				}
			}
		}
	}
	return out
}

func (bedrockWire) newAssembler() assembler { return &bedrockAssembler{} }

// newGate hands the gate a writer that frames its events as an AWS event
// stream when w takes bytes (framed).
func (bedrockWire) newGate(w io.Writer) streamGate {
	return newBedrockGate(framed(w, awsEventStream{}))
}
