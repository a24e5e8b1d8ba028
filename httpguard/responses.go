package httpguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolguard/toolguard/guard"
)

// responsesWire is OpenAI Responses (POST …/responses). Tool calls are the
// output items of type function_call, whose arguments is a JSON text
// inside a JSON string; call_id is what a function_call_output answers.
type responsesWire struct{}

func (responsesWire) name() string { return "openai.responses" }

// recognise: POST …/responses (not …/responses/{id}/cancel and the like).
func (responsesWire) recognise(method, path string) bool {
	return postTo(method, path, responsesPath)
}

func (responsesWire) ownsPath(path string) bool { return strings.HasSuffix(path, responsesPath) }

// responsesPath ends the path of a Responses request.
const responsesPath = "/responses"

// itemKind says how the guard treats an output item of a Responses
// answer.
type itemKind int

const (
	// itemFunction is a function_call: a guard call, validated, cleaned,
	// re-asked and counted like every protocol's tool calls.
	itemFunction itemKind = iota + 1
	// itemPassed needs no answer from the client: text, reasoning, a
	// compaction, a tool OpenAI runs itself (web and file search, code
	// interpreter, image generation, MCP calls and tool lists), or the
	// output of a call the server ran. It passes as it came and a re-ask
	// replays it.
	itemPassed
	// itemAnswered is a call of a tool the client runs, answered by a text
	// (custom_tool_call, shell_call, apply_patch_call, local_shell_call).
	// It passes as it came, unvalidated: the guard has no schema for it and
	// it is not a guard call (ToolCallLimit does not count it). A re-ask
	// replays it with an output saying it was not run (the client never read
	// the rejected turn, so it never ran), since OpenAI refuses a call
	// without its output.
	itemAnswered
	// itemLeftOut is a call of a tool the client runs whose output the
	// guard cannot write: a computer_call's output is a screenshot, an
	// mcp_approval_request's a person's decision, a client-run tool search's
	// the tools it loads. It passes as it came, unvalidated and not a guard
	// call; a re-ask leaves it out, with the reasoning items that led only to
	// it.
	itemLeftOut
)

// responsesItemKind is the kind of each output item type the wire code
// knows (0 for any other). A response with an item of any other type (one newer than this list, or
// one whose answer it cannot tell: program, additional_tools) cannot be
// guarded. A tool_search_call is itemPassed when OpenAI ran the search
// (execution "server", its tool_search_output in the same output) and
// itemLeftOut when the client runs it (execution "client"); any other
// execution cannot be guarded (toolSearchKind).
func responsesItemKind(typ string) itemKind {
	switch typ {
	case "function_call":
		return itemFunction
	case "message", "reasoning", "compaction",
		"web_search_call", "file_search_call", "code_interpreter_call",
		"image_generation_call", "mcp_call", "mcp_list_tools",
		"custom_tool_call_output", "shell_call_output",
		"apply_patch_call_output", "local_shell_call_output",
		"computer_call_output", "tool_search_output", "tool_search_call":
		return itemPassed
	case "custom_tool_call", "shell_call", "apply_patch_call", "local_shell_call":
		return itemAnswered
	case "computer_call", "mcp_approval_request":
		return itemLeftOut
	}
	return 0 // unknown
}

func (responsesWire) parseRequest(_ string, body []byte) (wireRequest, error) {
	readable, err := readableBody(body, responsesSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	req, ok := decodeResponsesRequest(readable)
	if !ok {
		if req, err = unmarshalRequest[responsesRequest](readable); err != nil {
			return wireRequest{}, err
		}
	}
	out := wireRequest{Model: req.Model, Stream: req.Stream, State: serverState{Stored: req.Store == nil || *req.Store}}
	if req.PreviousResponseID != nil {
		out.State.PreviousResponseID = *req.PreviousResponseID
	}
	if c := nullToNil(req.Conversation); c != nil {
		var id string
		if json.Unmarshal(c, &id) != nil {
			var obj struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(c, &obj); err != nil {
				return wireRequest{}, fmt.Errorf("%w: conversation: %v", errJSON, err)
			}
			id = obj.ID
		}
		out.State.Conversation = id
	}
	if len(req.Input) == 0 && out.State.PreviousResponseID == "" && out.State.Conversation == "" {
		return wireRequest{}, fmt.Errorf("%w: responses request without input", errUnsupported)
	}
	out.Tools = appendResponsesTools(out.Tools, req.Tools, "")
	loaded, err := toolSearchOutputs(req.Input)
	if err != nil {
		return wireRequest{}, err
	}
	for _, t := range appendResponsesTools(nil, loaded, "") {
		if !offered(out.Tools, t) {
			out.Tools = append(out.Tools, t)
		}
	}
	return ownSchemas(out), nil
}

// responsesRequest is what parseRequest reads of a Responses request.
type responsesRequest = struct {
	Model              string             `json:"model"`
	Stream             bool               `json:"stream"`
	Input              json.RawMessage    `json:"input"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Conversation       json.RawMessage    `json:"conversation"`
	Store              *bool              `json:"store"`
	Tools              []responsesToolDef `json:"tools"`
}

// decodeResponsesRequest reads the request body b into a
// responsesRequest by hand; ok false to leave it to encoding/json
// (request_decode.go).
func decodeResponsesRequest(b []byte) (req responsesRequest, ok bool) {
	ok = readRequest(b, func(key string, v int) (int, bool) {
		switch key {
		case "model":
			return requestString(b, v, &req.Model)
		case "stream":
			return requestBool(b, v, &req.Stream)
		case "input":
			return requestRaw(b, v, &req.Input)
		case "previous_response_id":
			return requestStringPtr(b, v, &req.PreviousResponseID)
		case "conversation":
			return requestRaw(b, v, &req.Conversation)
		case "store":
			return requestBoolPtr(b, v, &req.Store)
		case "tools":
			return requestSlice(b, v, &req.Tools, decodeResponsesToolDef)
		}
		return 0, false
	}, "model", "stream", "input", "previous_response_id", "conversation", "store", "tools")
	return req, ok
}

// responsesToolDef is a tool definition of a Responses request, in its
// tools or in a tool_search_output item of its input: a function (with
// "defer_loading": true or not), or a namespace grouping functions under
// its name. Other types are tools OpenAI runs, or custom tools, which
// have no JSON Schema.
type responsesToolDef struct {
	Type       string             `json:"type"`
	Name       string             `json:"name"`
	Parameters json.RawMessage    `json:"parameters"`
	Tools      []responsesToolDef `json:"tools"`
}

// decodeResponsesToolDef reads the object at b[at] into t, a namespace's
// tools included (readRequest).
func decodeResponsesToolDef(t *responsesToolDef, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(key string, v int) (int, bool) {
		switch key {
		case "type":
			return requestString(b, v, &t.Type, "function", "namespace")
		case "name":
			return requestString(b, v, &t.Name)
		case "parameters":
			return requestRaw(b, v, &t.Parameters)
		case "tools":
			return requestSlice(b, v, &t.Tools, decodeResponsesToolDef)
		}
		return 0, false
	}, "type", "name", "parameters", "tools")
}

// namespaceSep joins a namespace's name and its function's name into the
// tool name the guard knows the function by. OpenAI's function names are
// letters, digits, '_' and '-', so the joined name cannot be a plain
// function's.
const namespaceSep = "."

// namespacedName is the guard's name of the function name in namespace ns
// (a function_call names its namespace in a field of its own): name
// itself outside a namespace.
func namespacedName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + namespaceSep + name
}

// appendResponsesTools appends to out the function tools among defs, in
// order, those of a namespace named as namespacedName names them. A
// deferred function (defer_loading) is guarded as any other: its schema
// is in the request, only the model loads it later.
func appendResponsesTools(out []wireTool, defs []responsesToolDef, ns string) []wireTool {
	for _, t := range defs {
		switch {
		case t.Type == "function":
			tool := wireTool{Name: namespacedName(ns, t.Name), Schema: nullToNil(t.Parameters)}
			if isDeepSchema(tool.Schema) {
				tool.Schema, tool.Err = nil, errSchemaTooDeep
			}
			out = append(out, tool)
		case t.Type == "namespace" && ns == "":
			out = appendResponsesTools(out, t.Tools, t.Name)
		}
	}
	return out
}

// offered reports whether tools holds t with the same schema: a tool that
// a tool search loaded again, or that the request's tools also list, is
// offered once, so that it is not taken for two tools of one name.
func offered(tools []wireTool, t wireTool) bool {
	for _, o := range tools {
		if o.Name == t.Name && bytes.Equal(o.Schema, t.Schema) && (o.Err == nil) == (t.Err == nil) {
			return true
		}
	}
	return false
}

// toolSearchOutputs returns the tools of the tool_search_output items of a
// Responses input: the tools a tool search the client ran loaded (or a
// hosted search's output replayed), which the model calls like the
// request's own.
func toolSearchOutputs(input json.RawMessage) ([]responsesToolDef, error) {
	if len(input) == 0 || input[0] != '[' || !bytes.Contains(input, []byte(`"tool_search_output"`)) {
		return nil, nil
	}
	var items []struct {
		Type  string             `json:"type"`
		Tools []responsesToolDef `json:"tools"`
	}
	if err := json.Unmarshal(input, &items); err != nil {
		return nil, fmt.Errorf("%w: input: %v", errJSON, err)
	}
	var out []responsesToolDef
	for _, it := range items {
		if it.Type == "tool_search_output" {
			out = append(out, it.Tools...)
		}
	}
	return out, nil
}

// responsesSchemas finds a Responses request's tool schemas
// (readableBody): tools[].parameters, a namespace's
// tools[].tools[].parameters, and the same in the input's
// tool_search_output items.
func responsesSchemas(b []byte, r span) ([]span, error) {
	var out []span
	for _, steps := range [][][]string{
		{{"tools"}, {"parameters"}},
		{{"tools"}, {"tools"}, {"parameters"}},
		{{"input"}, {"tools"}, {"parameters"}},
		{{"input"}, {"tools"}, {"tools"}, {"parameters"}},
	} {
		sps, err := schemasAt(b, r, steps...)
		if err != nil {
			return nil, err
		}
		out = append(out, sps...)
	}
	return out, nil
}

// requestRoot returns the span of a request body's object, read as
// readableBody reads it.
func requestRoot(body []byte) (span, error) {
	if _, err := readableBody(body, responsesSchemas); err != nil {
		return span{}, err
	}
	return root(body)
}

// responsesOutput returns the spans of resp's output items, the positions
// among them of the function calls, and each item's kind. An item of a
// type the wire code does not know, or an output it cannot read, is an
// *unguardableError.
func responsesOutput(b []byte) (items []span, calls []int, kinds []itemKind, err error) {
	_, items, calls, kinds, err = responsesOutputDoc(b)
	return items, calls, kinds, err
}

// responsesOutputDoc is responsesOutput, with the response's doc.
func responsesOutputDoc(b []byte) (d doc, items []span, calls []int, kinds []itemKind, err error) {
	d, r, err := parseDoc(b)
	if err != nil {
		return doc{}, nil, nil, nil, unguardable("a response that is not a JSON object", err)
	}
	o, ok, err := d.field(r, "output")
	if err != nil {
		return d, nil, nil, nil, unguardable("a response whose output cannot be read", err)
	}
	if !ok || kind(b, o) == 'n' {
		return d, nil, nil, nil, nil
	}
	if items, err = d.arrayElems(o); err != nil {
		return d, nil, nil, nil, unguardable("a response whose output cannot be read", err)
	}
	kinds = make([]itemKind, len(items))
	for i, it := range items {
		typ, err := d.optStr(it, "type")
		if err != nil {
			return d, nil, nil, nil, unguardable("an output item whose type cannot be read", err)
		}
		k := responsesItemKind(typ)
		if k == 0 {
			return d, nil, nil, nil, unguardable("an output item of a type the guard does not know", fmt.Errorf("type %q", typ))
		}
		if typ == "tool_search_call" {
			if k, err = toolSearchKind(b, it); err != nil {
				return d, nil, nil, nil, err
			}
		}
		kinds[i] = k
		if k == itemFunction {
			calls = append(calls, i)
		}
	}
	return d, items, calls, kinds, nil
}

// toolSearchKind is the kind of the tool_search_call at it: a search OpenAI
// ran passes and is replayed with its output, a search the client runs is
// left out of a re-ask as a call whose output the guard cannot write.
func toolSearchKind(b []byte, it span) (itemKind, error) {
	exec, err := optStr(b, it, "execution")
	switch {
	case err != nil:
		return 0, unguardable("a tool search call that cannot be read", err)
	case exec == "server":
		return itemPassed, nil
	case exec == "client":
		return itemLeftOut, nil
	}
	return 0, unguardable("a tool search call whose execution the guard does not know", fmt.Errorf("execution %.64q", exec))
}

// calls reads the function calls of resp, in order: the output's other
// items are not guard calls (see itemKind).
func (responsesWire) calls(resp []byte) ([]wireCall, error) {
	d, items, calls, _, err := responsesOutputDoc(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(calls))
	for _, c := range calls {
		var f [4]found
		d.fields(items[c], []string{"call_id", "name", "arguments", "namespace"}, f[:])
		id, err := d.foundStr(f[0])
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		name, err := d.foundStr(f[1])
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		args, err := d.foundStr(f[2])
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		ns, err := d.foundStr(f[3])
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		out = append(out, wireCall{ID: id, Name: namespacedName(ns, name), Args: []byte(args)})
	}
	return out, nil
}

func (responsesWire) accept(resp []byte, args [][]byte) ([]byte, error) {
	items, calls, _, err := responsesOutput(resp)
	if err != nil {
		return nil, err
	}
	return setArgs(resp, args, len(calls), "arguments", func(i int) span { return items[calls[i]] }, func(a []byte) []byte { return marshalString(string(a)) })
}

// notRun is the output a re-ask gives a call of a tool the client runs
// (itemAnswered): the client never read the rejected turn that made it.
const notRun = "Not run: this call came in a turn that was not delivered, because a function call in it was invalid. Make the call again if it is still needed."

// notRunOutput is the output item that answers the call item of type typ
// whose call_id is id with notRun, in the shape of its type.
func notRunOutput(typ, id string) ([]byte, error) {
	switch typ {
	case "custom_tool_call":
		return callOutput("custom_tool_call_output", id, notRun)
	case "apply_patch_call":
		return marshal(struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Status string `json:"status"`
			Output string `json:"output"`
		}{"apply_patch_call_output", id, "failed", notRun})
	case "local_shell_call":
		return marshal(struct {
			Type   string `json:"type"`
			ID     string `json:"id"`
			Output string `json:"output"`
		}{"local_shell_call_output", id, notRun})
	case "shell_call":
		type outcome struct {
			Type     string `json:"type"`
			ExitCode int    `json:"exit_code"`
		}
		type content struct {
			Stdout  string  `json:"stdout"`
			Stderr  string  `json:"stderr"`
			Outcome outcome `json:"outcome"`
		}
		return marshal(struct {
			Type   string    `json:"type"`
			CallID string    `json:"call_id"`
			Output []content `json:"output"`
		}{"shell_call_output", id, []content{{"", notRun, outcome{"exit", 1}}}})
	}
	return nil, fmt.Errorf("httpguard: no output for a %s", typ)
}

// reask replays the response's output items as input items, as the
// response has them (reasoning items with their ids and
// encrypted_content, messages, calls with their call_ids; null members
// left out), then one output per call: the answer for each function call,
// notRun for a call of another tool the client runs (itemAnswered) that
// the output does not answer already (a hosted shell's output is in it).
// An itemLeftOut call is not replayed, nor a reasoning item followed by
// nothing else before the next reasoning item or the end: OpenAI refuses a
// reasoning item without the item it led to.
func (w responsesWire) reask(req, resp []byte, answers []wireAnswer) ([]byte, error) {
	r, err := requestRoot(req)
	if err != nil {
		return nil, err
	}
	items, _, kinds, err := responsesOutput(resp)
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
	types, answered, err := responsesOutputsAnswered(resp, items, kinds)
	if err != nil {
		return nil, err
	}
	keep := responsesReplayed(kinds, types)
	var add, outputs [][]byte
	call := 0
	for i, it := range items {
		if !keep[i] {
			continue
		}
		b, err := dropNulls(resp, it)
		if err != nil {
			return nil, err
		}
		add = append(add, b)
		switch kinds[i] {
		case itemFunction:
			b, err := callOutput("function_call_output", calls[call].ID, answers[call].Content)
			if err != nil {
				return nil, err
			}
			outputs = append(outputs, b)
			call++
		case itemAnswered:
			id, err := optStr(resp, it, "call_id")
			if err != nil {
				return nil, err
			}
			if answered[types[i]+"_output "+id] {
				continue
			}
			b, err := notRunOutput(types[i], id)
			if err != nil {
				return nil, err
			}
			outputs = append(outputs, b)
		}
	}
	return responsesAppendInput(req, r, append(add, outputs...))
}

// callOutput is the output item of type typ (function_call_output,
// custom_tool_call_output) that answers the call callID with output.
func callOutput(typ, callID, output string) ([]byte, error) {
	return marshal(struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}{typ, callID, output})
}

// responsesOutputsAnswered returns the type of each output item, and the
// calls the output answers already (a hosted tool's output item), by
// "<output type> <call id>".
func responsesOutputsAnswered(resp []byte, items []span, kinds []itemKind) ([]string, map[string]bool, error) {
	types := make([]string, len(items))
	answered := map[string]bool{}
	for i, it := range items {
		var err error
		if types[i], err = optStr(resp, it, "type"); err != nil {
			return nil, nil, err
		}
		if kinds[i] == itemPassed && strings.HasSuffix(types[i], "_output") {
			id, err := optStr(resp, it, "call_id")
			if err != nil {
				return nil, nil, err
			}
			if types[i] == "local_shell_call_output" {
				if id, err = optStr(resp, it, "id"); err != nil {
					return nil, nil, err
				}
			}
			answered[types[i]+" "+id] = true
		}
	}
	return types, answered, nil
}

// responsesReplayed returns which output items a re-ask replays: all but
// the itemLeftOut ones and a reasoning item that leads to no kept item
// before the next reasoning item or the end.
func responsesReplayed(kinds []itemKind, types []string) []bool {
	keep := make([]bool, len(kinds))
	led := false // a kept item follows, before the next reasoning item
	for i := len(kinds) - 1; i >= 0; i-- {
		switch {
		case kinds[i] == itemLeftOut:
		case types[i] == "reasoning":
			keep[i], led = led, false
		default:
			keep[i], led = true, true
		}
	}
	return keep
}

// responsesAppendInput returns the request req (its root r) with add
// appended to its input, whatever form the input has.
func responsesAppendInput(req []byte, r span, add [][]byte) ([]byte, error) {
	in, ok, err := requestField(req, r, "input")
	if err != nil {
		return nil, err
	}
	switch {
	case ok && kind(req, in) == '[':
		return appendToArray(req, in, add...)
	case ok && kind(req, in) == '"':
		// A string input is one user message; the list form replaces it.
		// With its type named: the API does without it, but openai-go's
		// input item union finds its variant by type.
		msg := append(append([]byte(`{"type":"message","role":"user","content":`), raw(req, in)...), '}')
		list := append(append([]byte("["), joinRaw(append([][]byte{msg}, add...))...), ']')
		return apply(req, edit{at: in, text: list}), nil
	default:
		e, err := setRequestMember(req, r, "input", append(append([]byte("["), joinRaw(add)...), ']'))
		if err != nil {
			return nil, err
		}
		return apply(req, e), nil
	}
}

func (responsesWire) usage(resp []byte) (wireUsage, error) {
	var r struct {
		Model string `json:"model"`
		Usage *struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := decodeResponse(resp, &r); err != nil {
		return wireUsage{}, err
	}
	u := wireUsage{Model: r.Model}
	if r.Usage != nil {
		u.Reported = true
		u.InputTokens, u.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
	}
	return u, nil
}

func (responsesWire) errorBody(_ int, typ, msg string) []byte { return openAIErrorBody(typ, msg) }

func (responsesWire) newAssembler() assembler { return &responsesAssembler{} }

func (responsesWire) newGate(w io.Writer) streamGate { return newResponsesGate(w) }

// text is the text of the message items' output_text and refusal parts.
func (responsesWire) text(resp []byte) (string, error) {
	var r struct {
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Refusal string `json:"refusal"`
			} `json:"content"`
		} `json:"output"`
	}
	if err := decodeResponse(resp, &r); err != nil {
		return "", err
	}
	var s strings.Builder
	for _, it := range r.Output {
		if it.Type != "message" {
			continue
		}
		for _, c := range it.Content {
			s.WriteString(c.Text)
			s.WriteString(c.Refusal)
		}
	}
	return s.String(), nil
}

// finish is the response's status, and why it is incomplete.
func (responsesWire) finish(resp []byte) []string {
	var r struct {
		Status            string `json:"status"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
	}
	if decodeResponse(resp, &r) != nil || r.Status == "" {
		return nil
	}
	if d := r.IncompleteDetails; d != nil && d.Reason != "" {
		return []string{d.Reason}
	}
	return []string{r.Status}
}

func (responsesWire) end(model, text string) []byte {
	id := standInID()
	b, _ := marshal(map[string]any{
		"id": "resp_toolguard_" + id, "object": "response", "created_at": time.Now().Unix(), "status": "completed",
		"error": nil, "incomplete_details": nil, "model": model,
		"output": []any{map[string]any{"id": "msg_toolguard_" + id, "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}},
		"usage": map[string]int{"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
	})
	return b
}

// transcript reads input: a string is one user turn; among items, a user
// message is a user turn, and the model's output items in a row (reasoning,
// assistant messages, function calls and other tool calls) are one model
// turn, holding its function calls; function_call_output items and system
// or developer messages are neither. What previous_response_id or a
// conversation holds server-side is not in the body, so it is not read.
func (responsesWire) transcript(req []byte) []guard.Message {
	var r struct {
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(req, &r) != nil {
		// A tool's parameters nested past what encoding/json reads:
		// the input is read all the same.
		readable, err := readableBody(req, responsesSchemas)
		if err != nil || json.Unmarshal(readable, &r) != nil {
			return nil
		}
	}
	if len(r.Input) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(r.Input, &s) == nil {
		return []guard.Message{{Kind: guard.UserTurn}}
	}
	var items []struct {
		Type string `json:"type"`
		Role string `json:"role"`
		Name string `json:"name"`
	}
	if json.Unmarshal(r.Input, &items) != nil {
		return nil
	}
	var out []guard.Message
	inModel := false
	for _, it := range items {
		model := false
		switch {
		case it.Type == "message" || (it.Type == "" && it.Role != ""):
			model = it.Role == "assistant"
		case it.Type == "function_call_output" || strings.HasSuffix(it.Type, "_output"), it.Type == "item_reference":
		default: // reasoning, function_call and the other calls the model makes
			model = true
		}
		switch {
		case model && !inModel:
			out = append(out, guard.Message{Kind: guard.ModelTurn})
		case !model && (it.Role == "user"):
			out = append(out, guard.Message{Kind: guard.UserTurn})
		case !model:
			out = append(out, guard.Message{})
		}
		inModel = model
		if it.Type == "function_call" {
			out[len(out)-1].Calls = append(out[len(out)-1].Calls, it.Name)
		}
	}
	return out
}
