package httpguard

import (
	"net/http"
	"strings"
)

// The protocol registry.
//
// Each wire protocol is one file set that implements wireProtocol: its
// recognition, its codec over raw bodies, its stream assembler and gate,
// its error shape and the framing its streams use (chat*.go,
// responses*.go, messages*.go, gemini*.go and their history_ and
// _malformed files; bedrock*.go over eventstream.go's framing). wireProtocols lists them, one line each; it is the
// only place outside a protocol's own files that names one, so a new
// protocol is a new file set and one line here.

// wireProtocols returns the protocols the transport guards, in the order
// recognise and errorProtocol ask them. The list is built on each call:
// nothing can change it.
func wireProtocols() []wireProtocol {
	return []wireProtocol{
		chatWire{},      // OpenAI Chat Completions: POST …/chat/completions
		responsesWire{}, // OpenAI Responses: POST …/responses
		messagesWire{},  // Anthropic Messages: POST …/v1/messages
		geminiWire{},    // Gemini: POST …/models/{m}:generateContent and :streamGenerateContent
		ollamaWire{},    // Ollama native: POST …/api/chat
		bedrockWire{},   // Amazon Bedrock Converse: POST …/model/{id}/converse and /converse-stream
	}
}

// fallbackProtocol is the protocol whose error shape answers a request to
// a path no protocol owns: OpenAI's, the shape OpenAI-compatible clients
// read.
func fallbackProtocol() wireProtocol { return chatWire{} }

// recognise returns the protocol of a request by its method and path, or
// nil: the first of wireProtocols that recognises it. The body still has
// to parse (parseRequest) for the request to be guarded.
func recognise(method, path string) wireProtocol {
	for _, p := range wireProtocols() {
		if p.recognise(method, path) {
			return p
		}
	}
	return nil
}

// errorProtocol is the protocol whose error shape answers a request to
// path: the first of wireProtocols that owns the path (with any method),
// else fallbackProtocol.
func errorProtocol(path string) wireProtocol {
	for _, p := range wireProtocols() {
		if p.ownsPath(path) {
			return p
		}
	}
	return fallbackProtocol()
}

// postTo reports whether a request of method to path is a POST to a path
// ending in suffix: how the protocols with a fixed endpoint recognise
// theirs.
func postTo(method, path, suffix string) bool {
	return method == http.MethodPost && strings.HasSuffix(path, suffix)
}

// Recognises reports whether a request with method and path is one a
// [Transport] reads as a model protocol's, its body then parsed as that
// protocol's request: a POST to a path of one of the protocols the package
// documentation lists (Protocols). A server that routes other traffic
// beside a Transport (toolguard-proxy's MCP requests) asks it, so that a
// model request is never taken for something else, whatever its body
// carries.
func Recognises(method, path string) bool { return recognise(method, path) != nil }
