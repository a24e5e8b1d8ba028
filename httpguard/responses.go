package httpguard

import (
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

// responsesItemTypes are the output item types the wire code can replay in
// a re-ask: function calls, and items that need no answer from the client
// (text, reasoning, tools run by OpenAI). A response with any other item
// (custom_tool_call, computer_call, local_shell_call, shell_call,
// apply_patch_call, mcp_approval_request, or a type newer than this list)
// would need an answer the guard cannot give, so it is not guarded.
var responsesItemTypes = map[string]bool{
	"message": true, "reasoning": true, "function_call": true,
	"web_search_call": true, "file_search_call": true, "code_interpreter_call": true,
	"image_generation_call": true, "mcp_call": true, "mcp_list_tools": true,
}

func (responsesWire) parseRequest(_ string, body []byte) (wireRequest, error) {
	var req struct {
		Model              string          `json:"model"`
		Stream             bool            `json:"stream"`
		Input              json.RawMessage `json:"input"`
		PreviousResponseID *string         `json:"previous_response_id"`
		Conversation       json.RawMessage `json:"conversation"`
		Store              *bool           `json:"store"`
		Tools              []struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if _, err := parseBody(body); err != nil {
		return wireRequest{}, err
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return wireRequest{}, fmt.Errorf("%w: %v", errJSON, err)
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
	for _, t := range req.Tools {
		if t.Type == "function" {
			out.Tools = append(out.Tools, wireTool{Name: t.Name, Schema: nullToNil(t.Parameters)})
		}
	}
	return out, nil
}

// responsesOutput returns the spans of resp's output items and the
// positions among them of the function calls.
func responsesOutput(b []byte) (items []span, calls []int, err error) {
	r, err := parseBody(b)
	if err != nil {
		return nil, nil, err
	}
	o, ok, err := field(b, r, "output")
	if err != nil || !ok || kind(b, o) == 'n' {
		return nil, nil, err
	}
	items, err = arrayElems(b, o)
	if err != nil {
		return nil, nil, err
	}
	for i, it := range items {
		typ, err := optStr(b, it, "type")
		if err != nil {
			return nil, nil, err
		}
		if !responsesItemTypes[typ] {
			return nil, nil, fmt.Errorf("%w: output item of type %q", errUnsupported, typ)
		}
		if typ == "function_call" {
			calls = append(calls, i)
		}
	}
	return items, calls, nil
}

func (responsesWire) calls(resp []byte) ([]wireCall, error) {
	items, calls, err := responsesOutput(resp)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(calls))
	for _, c := range calls {
		it := items[c]
		id, err := optStr(resp, it, "call_id")
		if err != nil {
			return nil, err
		}
		name, err := optStr(resp, it, "name")
		if err != nil {
			return nil, err
		}
		args, err := optStr(resp, it, "arguments")
		if err != nil {
			return nil, err
		}
		out = append(out, wireCall{ID: id, Name: name, Args: []byte(args)})
	}
	return out, nil
}

func (responsesWire) accept(resp []byte, args [][]byte) ([]byte, error) {
	items, calls, err := responsesOutput(resp)
	if err != nil {
		return nil, err
	}
	if err := checkArgs(args, len(calls)); err != nil {
		return nil, err
	}
	var edits []edit
	for i, a := range args {
		if a == nil {
			continue
		}
		e, err := setMember(resp, items[calls[i]], "arguments", marshalString(string(a)))
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
	}
	return apply(resp, edits...), nil
}

func (w responsesWire) reask(req, resp []byte, answers []wireAnswer) ([]byte, error) {
	r, err := parseBody(req)
	if err != nil {
		return nil, err
	}
	items, _, err := responsesOutput(resp)
	if err != nil {
		return nil, err
	}
	calls, err := w.calls(resp)
	if err != nil {
		return nil, err
	}
	if len(answers) != len(calls) {
		return nil, fmt.Errorf("httpguard: %d answers for %d calls", len(answers), len(calls))
	}
	// Every output item replayed as an input item, as the response has it
	// (reasoning items with their ids and encrypted_content, messages,
	// function calls with their call_ids), null members left out.
	var add [][]byte
	for _, it := range items {
		b, err := dropNulls(resp, it)
		if err != nil {
			return nil, err
		}
		add = append(add, b)
	}
	for i, c := range calls {
		b, err := marshal(struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		}{"function_call_output", c.ID, answers[i].Content})
		if err != nil {
			return nil, err
		}
		add = append(add, b)
	}
	in, ok, err := requestField(req, r, "input")
	if err != nil {
		return nil, err
	}
	switch {
	case ok && kind(req, in) == '[':
		e, err := appendElems(req, in, add...)
		if err != nil {
			return nil, err
		}
		return apply(req, e), nil
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
	if json.Unmarshal(req, &r) != nil || len(r.Input) == 0 {
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
