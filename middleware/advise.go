package middleware

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/safetext"
)

// ErrStringPlaceholder is wrapped by the Err of a [guard.EventMisconfigured]
// that [ToolArgValidation] reports, once per middleware value, for a tool
// whose schema is langchaingo's one-string placeholder, {"__arg1": string}:
// langchaingo's agents.OpenAIFunctionsAgent offers every tool that way, so
// the model is never shown, and ToolArgValidation never checks, the tool's
// own arguments. Offer the tools' own schemas with package agent/lctool
// (OfferSchemas, with SchemaFor for an existing tools.Tool).
var ErrStringPlaceholder = errors.New("middleware: a tool offered with langchaingo's one-string schema")

var _ guard.Advisor = codec{}

// placeholderArg is the one argument langchaingo's OpenAIFunctionsAgent
// declares for every tool.
const placeholderArg = "__arg1"

// AdviseTools returns an error wrapping [ErrStringPlaceholder] for the
// first tool offered with langchaingo's one-string placeholder schema.
func (codec) AdviseTools(tools []guard.Tool) (string, error) {
	for _, t := range tools {
		if isStringPlaceholder(t.Schema) {
			return t.Name, fmt.Errorf("%w: tool %s is offered as {%q: string} (langchaingo's agents.OpenAIFunctionsAgent offers every tool so), "+
				"so its typed arguments are neither shown to the model nor validated; offer each tool's own schema: "+
				"lctool.OfferSchemas(lctool.SchemaFor(tool, schema), ...) before ToolArgValidation", ErrStringPlaceholder, safetext.Quote(t.Name, 80), placeholderArg)
		}
	}
	return "", nil
}

// AdviseEmpty names the usual cause of an answer with neither tool calls
// nor text through langchaingo: its native ollama client, which sends no
// tools and drops the tool calls of Ollama's answer.
func (codec) AdviseEmpty() string {
	return "langchaingo's native ollama client drops tool calls: use its openai client with Ollama's /v1 endpoint"
}

// isStringPlaceholder reports whether schema (as a request offers it) is
// langchaingo's one-string placeholder: an object schema whose only
// property is "__arg1".
func isStringPlaceholder(schema any) bool {
	var m map[string]any
	switch s := schema.(type) {
	case map[string]any:
		m = s
	case json.RawMessage:
		return rawPlaceholder(s)
	case []byte:
		return rawPlaceholder(s)
	case string:
		return rawPlaceholder([]byte(s))
	default:
		return false
	}
	props, _ := m["properties"].(map[string]any)
	_, ok := props[placeholderArg]
	return ok && len(props) == 1
}

func rawPlaceholder(raw []byte) bool {
	if !bytes.Contains(raw, []byte(placeholderArg)) {
		return false
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	_, ok := s.Properties[placeholderArg]
	return ok && len(s.Properties) == 1
}
