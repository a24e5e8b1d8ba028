package httpguard

import (
	"encoding/json"
	"fmt"
)

// The oracle of the request decoders: each protocol's parseRequest as it
// was before it read a request by hand (request_decode.go), all of it by
// json.Unmarshal. The differential test and the fuzzers hold the
// parseRequest of today to these, byte for byte in what they return.

// oracleParseRequest is w's parseRequest before request_decode.go.
func oracleParseRequest(w wireProtocol, path string, body []byte) (wireRequest, error) {
	switch w.(type) {
	case chatWire:
		return oracleChatRequest(path, body)
	case ollamaWire:
		return oracleOllamaRequest(path, body)
	case messagesWire:
		return oracleMessagesRequest(path, body)
	case responsesWire:
		return oracleResponsesRequest(path, body)
	case geminiWire:
		return oracleGeminiRequest(path, body)
	case bedrockWire:
		return oracleBedrockRequest(path, body)
	}
	panic(fmt.Sprintf("no oracle for %T", w))
}

func oracleChatRequest(_ string, body []byte) (wireRequest, error) {
	var req struct {
		Model    string   `json:"model"`
		Stream   bool     `json:"stream"`
		Messages jsonKind `json:"messages"`
		Store    bool     `json:"store"`
		Tools    []struct {
			Type     string `json:"type"`
			Function *struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	readable, err := readableBody(body, functionSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	if r, err := root(readable); err != nil || kind(readable, r) != '{' {
		return wireRequest{}, fmt.Errorf("%w: want an object", errJSON)
	}
	if err := json.Unmarshal(readable, &req); err != nil {
		return wireRequest{}, fmt.Errorf("%w: %v", errJSON, err)
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
	return out, nil
}

func oracleOllamaRequest(_ string, body []byte) (wireRequest, error) {
	var req struct {
		Model    string   `json:"model"`
		Stream   *bool    `json:"stream"`
		Messages jsonKind `json:"messages"`
		Tools    []struct {
			Type     string `json:"type"`
			Function *struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	readable, err := readableBody(body, functionSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	if r, err := root(readable); err != nil || kind(readable, r) != '{' {
		return wireRequest{}, fmt.Errorf("%w: want an object", errJSON)
	}
	if err := json.Unmarshal(readable, &req); err != nil {
		return wireRequest{}, fmt.Errorf("%w: %v", errJSON, err)
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
	return out, nil
}

func oracleMessagesRequest(_ string, body []byte) (wireRequest, error) {
	var req struct {
		Model    string   `json:"model"`
		Stream   bool     `json:"stream"`
		Messages jsonKind `json:"messages"`
		Thread   *struct {
			Type              string `json:"type"`
			PreviousMessageID string `json:"previous_message_id"`
		} `json:"thread"`
		Tools []struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	readable, err := readableBody(body, messagesSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	if err := json.Unmarshal(readable, &req); err != nil {
		return wireRequest{}, fmt.Errorf("%w: %v", errJSON, err)
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
	return out, nil
}

func oracleResponsesRequest(_ string, body []byte) (wireRequest, error) {
	var req struct {
		Model              string             `json:"model"`
		Stream             bool               `json:"stream"`
		Input              json.RawMessage    `json:"input"`
		PreviousResponseID *string            `json:"previous_response_id"`
		Conversation       json.RawMessage    `json:"conversation"`
		Store              *bool              `json:"store"`
		Tools              []responsesToolDef `json:"tools"`
	}
	readable, err := readableBody(body, responsesSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	if err := json.Unmarshal(readable, &req); err != nil {
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
	return out, nil
}

func oracleGeminiRequest(path string, body []byte) (wireRequest, error) {
	model, method, ok := geminiPath(path)
	if !ok {
		return wireRequest{}, fmt.Errorf("%w: not a generateContent path", errUnsupported)
	}
	var req struct {
		Contents jsonKind `json:"contents"`
		Tools    []struct {
			FunctionDeclarations   []geminiDecl `json:"functionDeclarations"`
			FunctionDeclarationsSn []geminiDecl `json:"function_declarations"`
		} `json:"tools"`
		GenerationConfig *struct {
			CandidateCount   *int `json:"candidateCount"`
			CandidateCountSn *int `json:"candidate_count"`
		} `json:"generationConfig"`
	}
	readable, err := readableBody(body, geminiSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	if err := json.Unmarshal(readable, &req); err != nil {
		return wireRequest{}, fmt.Errorf("%w: %v", errJSON, err)
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
	return out, nil
}

func oracleBedrockRequest(path string, body []byte) (wireRequest, error) {
	model, stream, ok := bedrockPath(path)
	if !ok {
		return wireRequest{}, fmt.Errorf("%w: not a Converse path", errUnsupported)
	}
	var req struct {
		Messages   jsonKind `json:"messages"`
		ToolConfig *struct {
			Tools []struct {
				ToolSpec *struct {
					Name        string `json:"name"`
					InputSchema *struct {
						JSON json.RawMessage `json:"json"`
					} `json:"inputSchema"`
				} `json:"toolSpec"`
			} `json:"tools"`
		} `json:"toolConfig"`
	}
	readable, err := readableBody(body, bedrockSchemas)
	if err != nil {
		return wireRequest{}, err
	}
	if err := json.Unmarshal(readable, &req); err != nil {
		return wireRequest{}, fmt.Errorf("%w: %v", errJSON, err)
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
	return out, nil
}
