package httpguard

import (
	"encoding/json"
	"fmt"
	"io"
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
	in, ok, err := field(req, r, "input")
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
		e, err := setMember(req, r, "input", append(append([]byte("["), joinRaw(add)...), ']'))
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
	if err := json.Unmarshal(resp, &r); err != nil {
		return wireUsage{}, fmt.Errorf("%w: %v", errJSON, err)
	}
	u := wireUsage{Model: r.Model}
	if r.Usage != nil {
		u.InputTokens, u.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
	}
	return u, nil
}

func (responsesWire) errorBody(_ int, typ, msg string) []byte { return openAIErrorBody(typ, msg) }

func (responsesWire) newAssembler() assembler { return &responsesAssembler{} }

func (responsesWire) newGate(w io.Writer) streamGate { return newResponsesGate(w) }
