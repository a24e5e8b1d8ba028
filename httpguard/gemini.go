package httpguard

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolguard/toolguard/guard"
)

// geminiWire is Gemini's generateContent (POST
// …/models/{model}:generateContent and …:streamGenerateContent?alt=sse),
// as the Gemini API and Vertex AI serve it. Tool calls are the parts with
// a functionCall, whose args is a JSON object and whose id Gemini may
// leave out: calls are matched by position and name, and no id is ever
// written into what the client reads.
type geminiWire struct{}

func (geminiWire) name() string { return "gemini" }

// recognise: POST …/models/{model}:generateContent or
// :streamGenerateContent (not :countTokens and the like).
func (geminiWire) recognise(method, path string) bool {
	if method != http.MethodPost {
		return false
	}
	_, _, ok := geminiPath(path)
	return ok
}

// ownsPath: any …/models/{model}:{method}, guarded or not.
func (geminiWire) ownsPath(path string) bool {
	i := strings.LastIndex(path, "/models/")
	return i >= 0 && strings.Contains(path[i:], ":")
}

// geminiPath splits a Gemini path into its model and method.
func geminiPath(path string) (model, method string, ok bool) {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return "", "", false
	}
	model, method, ok = strings.Cut(path[i+len("/models/"):], ":")
	if !ok || model == "" || strings.Contains(model, "/") {
		return "", "", false
	}
	if method != "generateContent" && method != "streamGenerateContent" {
		return "", "", false
	}
	return model, method, true
}

func (geminiWire) parseRequest(path string, body []byte) (wireRequest, error) {
	model, method, ok := geminiPath(path)
	if !ok {
		return wireRequest{}, fmt.Errorf("%w: not a generateContent path", errUnsupported)
	}
	readable, err := readableBody(body, geminiSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	req, ok := decodeGeminiRequest(readable)
	if !ok {
		if req, err = unmarshalRequest[geminiRequest](readable); err != nil {
			return wireRequest{}, err
		}
	}
	if req.Contents != '[' {
		return wireRequest{}, fmt.Errorf("%w: generateContent request without contents", errUnsupported)
	}
	if gc := req.GenerationConfig; gc != nil {
		for _, n := range []*int{gc.CandidateCount, gc.CandidateCountSn} {
			if n != nil && *n > 1 {
				return wireRequest{}, fmt.Errorf("%w: candidateCount = %d", errUnsupported, *n)
			}
		}
	}
	out := wireRequest{Model: model, Stream: method == "streamGenerateContent"}
	for _, t := range req.Tools {
		for _, d := range append(t.FunctionDeclarations, t.FunctionDeclarationsSn...) {
			out.Tools = append(out.Tools, d.tool())
		}
	}
	return ownSchemas(out), nil
}

// geminiRequest is what parseRequest reads of a generateContent request.
type geminiRequest = struct {
	Contents         jsonKind                `json:"contents"`
	Tools            []geminiTool            `json:"tools"`
	GenerationConfig *geminiGenerationConfig `json:"generationConfig"`
}

// geminiTool is a tool of a generateContent request: its function
// declarations, under either spelling of their key.
type geminiTool = struct {
	FunctionDeclarations   []geminiDecl `json:"functionDeclarations"`
	FunctionDeclarationsSn []geminiDecl `json:"function_declarations"`
}

// geminiGenerationConfig is what parseRequest reads of a
// generateContent request's generationConfig.
type geminiGenerationConfig = struct {
	CandidateCount   *int `json:"candidateCount"`
	CandidateCountSn *int `json:"candidate_count"`
}

// decodeGeminiRequest reads the request body b into a geminiRequest by
// hand; ok false to leave it to encoding/json (request_decode.go).
func decodeGeminiRequest(b []byte) (req geminiRequest, ok bool) {
	ok = readRequest(b, func(key string, v int) (int, bool) {
		switch key {
		case "contents":
			return requestKind(b, v, &req.Contents)
		case "tools":
			return requestSlice(b, v, &req.Tools, decodeGeminiTool)
		case "generationConfig":
			return requestObjectPtr(b, v, &req.GenerationConfig, decodeGeminiGenerationConfig)
		}
		return 0, false
	}, "contents", "tools", "generationConfig")
	return req, ok
}

// decodeGeminiTool reads the object at b[at] into t (readRequest).
func decodeGeminiTool(t *geminiTool, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(key string, v int) (int, bool) {
		switch key {
		case "functionDeclarations":
			return requestSlice(b, v, &t.FunctionDeclarations, decodeGeminiDecl)
		case "function_declarations":
			return requestSlice(b, v, &t.FunctionDeclarationsSn, decodeGeminiDecl)
		}
		return 0, false
	}, "functionDeclarations", "function_declarations")
}

// decodeGeminiGenerationConfig reads the object at b[at] into gc
// (readRequest).
func decodeGeminiGenerationConfig(gc *geminiGenerationConfig, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(key string, v int) (int, bool) {
		switch key {
		case "candidateCount":
			return requestIntPtr(b, v, &gc.CandidateCount)
		case "candidate_count":
			return requestIntPtr(b, v, &gc.CandidateCountSn)
		}
		return 0, false
	}, "candidateCount", "candidate_count")
}

// geminiDecl is a function declaration of a Gemini request.
type geminiDecl struct {
	Name                   string          `json:"name"`
	Parameters             json.RawMessage `json:"parameters"`
	ParametersJSONSchema   json.RawMessage `json:"parametersJsonSchema"`
	ParametersJSONSchemaSn json.RawMessage `json:"parameters_json_schema"`
}

// decodeGeminiDecl reads the object at b[at] into d (readRequest).
func decodeGeminiDecl(d *geminiDecl, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(key string, v int) (int, bool) {
		switch key {
		case "name":
			return requestString(b, v, &d.Name)
		case "parameters":
			return requestRaw(b, v, &d.Parameters)
		case "parametersJsonSchema":
			return requestRaw(b, v, &d.ParametersJSONSchema)
		case "parameters_json_schema":
			return requestRaw(b, v, &d.ParametersJSONSchemaSn)
		}
		return 0, false
	}, "name", "parameters", "parametersJsonSchema", "parameters_json_schema")
}

// tool is the declared function with its schema: parametersJsonSchema as
// it is, else parameters converted. A schema that cannot be read (nested
// too deep) or converted costs that tool's calls only (wireTool.Err).
func (d geminiDecl) tool() wireTool {
	tool := wireTool{Name: d.Name}
	switch {
	case nullToNil(d.ParametersJSONSchema) != nil:
		tool.Schema = d.ParametersJSONSchema
	case nullToNil(d.ParametersJSONSchemaSn) != nil:
		tool.Schema = d.ParametersJSONSchemaSn
	case isDeepSchema(d.Parameters):
		tool.Err = errSchemaTooDeep
	case nullToNil(d.Parameters) != nil:
		s, err := geminiSchemaToJSONSchema(d.Parameters)
		if err != nil {
			tool.Err = fmt.Errorf("httpguard: tool %q: %w", d.Name, err)
		}
		tool.Schema = s
	}
	if isDeepSchema(tool.Schema) {
		tool.Schema, tool.Err = nil, errSchemaTooDeep
	}
	return tool
}

// geminiSchemas finds a generateContent request's tool schemas
// (readableBody).
func geminiSchemas(b []byte, r span) ([]span, error) {
	return schemasAt(b, r, []string{"tools"}, []string{"functionDeclarations", "function_declarations"},
		[]string{"parameters", "parametersJsonSchema", "parameters_json_schema"})
}

// geminiParts returns the span of candidates[0].content and the spans of
// its parts. Several candidates are read as the first when none of them
// holds a function call (the client may read any of them, none calls
// anything); when one does, the response cannot be guarded: a client
// reads the calls of whichever candidate it picks, and a re-ask replays
// one turn.
func geminiParts(b []byte) (content span, parts []span, ok bool, err error) {
	_, content, parts, ok, err = geminiPartsDoc(b)
	return content, parts, ok, err
}

// geminiPartsDoc is geminiParts, with the response's doc.
func geminiPartsDoc(b []byte) (d doc, content span, parts []span, ok bool, err error) {
	d, r, err := parseDoc(b)
	if err != nil {
		return doc{}, span{}, nil, false, err
	}
	cs, ok, err := d.field(r, "candidates")
	if err != nil || !ok || kind(b, cs) == 'n' {
		return d, span{}, nil, false, err
	}
	es, err := d.arrayElems(cs)
	if err != nil || len(es) == 0 {
		return d, span{}, nil, false, err
	}
	if len(es) > 1 {
		for _, e := range es {
			if calls, err := candidateCallsDoc(d, e); err != nil {
				return d, span{}, nil, false, err
			} else if calls {
				return d, span{}, nil, false, unguardable(severalCandidates, fmt.Errorf("%d candidates", len(es)))
			}
		}
	}
	content, ok, err = d.field(es[0], "content")
	if err != nil || !ok || kind(b, content) != '{' {
		return d, span{}, nil, false, err
	}
	ps, ok, err := d.field(content, "parts")
	if err != nil || !ok || kind(b, ps) == 'n' {
		return d, content, nil, true, err
	}
	parts, err = d.arrayElems(ps)
	return d, content, parts, true, err
}

// severalCandidates is why a Gemini answer whose candidates are several,
// one of them with function calls, cannot be guarded.
const severalCandidates = "gemini candidates are several, with function calls"

// candidateCalls reports whether the candidate at sp holds a functionCall
// part.
func candidateCalls(b []byte, sp span) (bool, error) { return candidateCallsDoc(doc{b: b}, sp) }

func candidateCallsDoc(d doc, sp span) (bool, error) {
	b := d.b
	if kind(b, sp) != '{' {
		return false, nil
	}
	c, ok, err := d.field(sp, "content")
	if err != nil || !ok || kind(b, c) != '{' {
		return false, err
	}
	ps, ok, err := d.field(c, "parts")
	if err != nil || !ok || kind(b, ps) != '[' {
		return false, err
	}
	parts, err := d.arrayElems(ps)
	if err != nil {
		return false, err
	}
	fcs, err := geminiCalls(d, parts)
	return len(fcs) > 0, err
}

// geminiCalls returns the functionCall spans of parts, in order.
func geminiCalls(d doc, parts []span) ([]span, error) {
	var out []span
	for _, p := range parts {
		fc, ok, err := d.field(p, "functionCall")
		if err != nil {
			return nil, err
		}
		if ok && kind(d.b, fc) == '{' {
			out = append(out, fc)
		}
	}
	return out, nil
}

// geminiUnread is why a Gemini answer that is not the JSON of the
// protocol cannot be guarded.
const geminiUnread = "gemini answer not in the protocol's shape"

func (geminiWire) calls(resp []byte) ([]wireCall, error) {
	out, err := geminiCallsOf(resp)
	return out, unreadable(geminiUnread, err)
}

// geminiCallsOf is geminiWire.calls.
func geminiCallsOf(resp []byte) ([]wireCall, error) {
	d, _, parts, _, err := geminiPartsDoc(resp)
	if err != nil {
		return nil, err
	}
	fcs, err := geminiCalls(d, parts)
	if err != nil {
		return nil, err
	}
	out := make([]wireCall, 0, len(fcs))
	for _, fc := range fcs {
		c, err := geminiCallDoc(d, fc)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// geminiCall reads the functionCall at fc of b: its id, name and args.
func geminiCall(b []byte, fc span) (wireCall, error) { return geminiCallDoc(doc{b: b}, fc) }

func geminiCallDoc(d doc, fc span) (wireCall, error) {
	var f [3]found
	d.fields(fc, []string{"id", "name", "args"}, f[:])
	id, err := d.foundStr(f[0])
	if err != nil {
		return wireCall{}, err
	}
	name, err := d.foundStr(f[1])
	if err != nil {
		return wireCall{}, err
	}
	var args []byte
	if a := f[2]; a.err != nil {
		return wireCall{}, a.err
	} else if a.ok {
		if args, err = objectArgs(d.b, a.v); err != nil {
			return wireCall{}, err
		}
	}
	return wireCall{ID: id, Name: name, Args: args}, nil
}

func (geminiWire) accept(resp []byte, args [][]byte) ([]byte, error) {
	d, _, parts, _, err := geminiPartsDoc(resp)
	if err != nil {
		return nil, unreadable(geminiUnread, err)
	}
	fcs, err := geminiCalls(d, parts)
	if err != nil {
		return nil, unreadable(geminiUnread, err)
	}
	return setArgs(resp, args, len(fcs), "args", func(i int) span { return fcs[i] }, nil)
}

// geminiContents returns the contents of a Gemini request req, the
// conversation a re-ask appends to.
func geminiContents(req []byte) (span, error) {
	if _, err := readableBody(req, geminiSchemas); err != nil {
		return span{}, err
	}
	r, err := root(req)
	if err != nil {
		return span{}, err
	}
	return requestList(req, r, "contents")
}

func (w geminiWire) reask(req, resp []byte, answers []wireAnswer) ([]byte, error) {
	contents, err := geminiContents(req)
	if err != nil {
		return nil, err
	}
	content, _, ok, err := geminiParts(resp)
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: response without content", errJSON)
	}
	calls, err := w.calls(resp)
	if err != nil {
		return nil, err
	}
	if err := checkAnswers(answers, len(calls)); err != nil {
		return nil, err
	}
	// The model's turn as the response has it, thought signatures on the
	// parts they came on.
	turn := raw(resp, content)
	if role, err := optStr(resp, content, "role"); err != nil {
		return nil, err
	} else if role == "" {
		if turn, err = setAt(turn, nil, "role", []byte(`"model"`)); err != nil {
			return nil, err
		}
	}
	type fnResp struct {
		ID       string            `json:"id,omitempty"`
		Name     string            `json:"name"`
		Response map[string]string `json:"response"`
	}
	type part struct {
		FunctionResponse fnResp `json:"functionResponse"`
	}
	parts := make([]part, len(calls))
	for i, c := range calls {
		key := "output"
		if answers[i].IsError {
			key = "error"
		}
		parts[i] = part{fnResp{c.ID, c.Name, map[string]string{key: answers[i].Content}}}
	}
	user, err := marshal(struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}{"user", parts})
	if err != nil {
		return nil, err
	}
	return appendToArray(req, contents, turn, user)
}

// usage counts thoughtsTokenCount as output, as Gemini bills it.
func (geminiWire) usage(resp []byte) (wireUsage, error) {
	var r struct {
		ModelVersion  string `json:"modelVersion"`
		UsageMetadata *struct {
			PromptTokenCount     int64 `json:"promptTokenCount"`
			CandidatesTokenCount int64 `json:"candidatesTokenCount"`
			ThoughtsTokenCount   int64 `json:"thoughtsTokenCount"`
		} `json:"usageMetadata"`
	}
	if err := decodeResponse(resp, &r); err != nil {
		return wireUsage{}, err
	}
	u := wireUsage{Model: r.ModelVersion}
	if m := r.UsageMetadata; m != nil {
		u.Reported = true
		u.InputTokens, u.OutputTokens = m.PromptTokenCount, m.CandidatesTokenCount+m.ThoughtsTokenCount
	}
	return u, nil
}

// errorBody is Google's error shape, {"error": {"code", "message",
// "status", "details"}}: status Google's name for the HTTP status
// (INVALID_ARGUMENT for a 422, Google's for a request that cannot be
// served as it is), the kind of refusal in an ErrorInfo's reason (typ
// upper-cased) with domain toolguard.
func (geminiWire) errorBody(status int, typ, msg string) []byte {
	type errorInfo struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
		Domain string `json:"domain"`
	}
	b, _ := marshal(struct {
		Error struct {
			Code    int         `json:"code"`
			Message string      `json:"message"`
			Status  string      `json:"status"`
			Details []errorInfo `json:"details"`
		} `json:"error"`
	}{Error: struct {
		Code    int         `json:"code"`
		Message string      `json:"message"`
		Status  string      `json:"status"`
		Details []errorInfo `json:"details"`
	}{status, msg, googleStatus(status), []errorInfo{{"type.googleapis.com/google.rpc.ErrorInfo", strings.ToUpper(typ), "toolguard"}}}})
	return b
}

func (geminiWire) newAssembler() assembler { return &geminiAssembler{} }

func (geminiWire) newGate(w io.Writer) streamGate { return newGeminiGate(w) }

// text is the text of candidates[0]'s parts that are not thoughts.
func (geminiWire) text(resp []byte) (string, error) {
	_, parts, ok, err := geminiParts(resp)
	if err != nil || !ok {
		return "", err
	}
	var s strings.Builder
	for _, p := range parts {
		if err := checkFields(resp, p, "text", "thought"); err != nil {
			return "", err
		}
		if !isAnswerPart(resp, p) {
			continue
		}
		if t, err := optStr(resp, p, "text"); err == nil {
			s.WriteString(t)
		}
	}
	return s.String(), nil
}

func (geminiWire) finish(resp []byte) []string {
	var r struct {
		Candidates []struct {
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	if decodeResponse(resp, &r) != nil || len(r.Candidates) == 0 || r.Candidates[0].FinishReason == "" {
		return nil
	}
	return []string{r.Candidates[0].FinishReason}
}

func (geminiWire) end(model, text string) []byte {
	b, _ := marshal(map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0},
		"modelVersion":  model, "responseId": "toolguard-" + standInID(),
	})
	return b
}

// transcript reads contents: a user content is a user turn unless it holds
// functionResponse parts (the answers to the model's calls, text beside
// them or not: the turn goes on), a model content a model turn with its
// functionCall parts.
func (geminiWire) transcript(req []byte) []guard.Message {
	var r struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				FunctionCall *struct {
					Name string `json:"name"`
				} `json:"functionCall"`
				FunctionResponse json.RawMessage `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if json.Unmarshal(req, &r) != nil {
		// A tool schema nested too deep for encoding/json: the rest.
		readable, err := readableBody(req, geminiSchemas)
		if err != nil || json.Unmarshal(readable, &r) != nil {
			return nil
		}
	}
	out := make([]guard.Message, len(r.Contents))
	for i, c := range r.Contents {
		switch c.Role {
		case "model":
			out[i].Kind = guard.ModelTurn
			for _, p := range c.Parts {
				if p.FunctionCall != nil {
					out[i].Calls = append(out[i].Calls, p.FunctionCall.Name)
				}
			}
		default: // "user", or no role (a single-turn request)
			results := false
			for _, p := range c.Parts {
				results = results || len(nullToNil(p.FunctionResponse)) > 0
			}
			if !results {
				out[i].Kind = guard.UserTurn
			}
		}
	}
	return out
}

// googleStatus is Google's status name for an HTTP status, as its APIs
// pair them (google.rpc.Code).
func googleStatus(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "INVALID_ARGUMENT"
}
