package httpguard

import (
	"encoding/json"
	"fmt"
)

// The structs of what each protocol's parseRequest reads of a request
// (chatRequest, messagesRequest, …) are aliases of struct literals, not
// defined types: encoding/json names a struct's type in its errors ("Go
// struct field .model of type string"), which reach the client in a
// refusal's message, and a request must fail as it always has.

// unmarshalRequest decodes the request body b, which readableBody has
// checked, into a T, the struct of what a protocol's parseRequest reads;
// errJSON with encoding/json's words when the body does not fit it.
func unmarshalRequest[T any](b []byte) (T, error) {
	var req T
	if err := json.Unmarshal(b, &req); err != nil {
		return req, fmt.Errorf("%w: %v", errJSON, err)
	}
	return req, nil
}

// functionTool is a tool of a request whose function tools are
// tools[].function (OpenAI Chat Completions', Ollama's).
type functionTool = struct {
	Type     string        `json:"type"`
	Function *functionDecl `json:"function"`
}

// functionDecl is a functionTool's function.
type functionDecl = struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
}
