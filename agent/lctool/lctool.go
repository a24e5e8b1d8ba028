// Package lctool adapts langchaingo tools to [toolstage.Tool], so that tools
// written for langchaingo's agents (tools.Calculator, SerpAPI, your own
// tools.Tool) run in a toolguard agent ([FromLangchain]); and the other way,
// typed tools ([toolstage.NewTool], MCP tools) to an unchanged langchaingo
// agents.Executor, whose model is offered their own schemas rather than one
// string ([ToLangchain], [OfferSchemas]).
//
// It is a package of its own because langchaingo's tools package pulls in
// go.starlark.net (for tools.Calculator): programs that do not adapt
// langchaingo tools do not pay for it.
package lctool

import (
	"context"
	"encoding/json"

	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard/toolstage"
)

// FromLangchain returns t as an [toolstage.Tool] with t's name and description.
//
// A langchaingo tool takes one string. The adapted tool offers it to the
// model the way langchaingo's OpenAIFunctionsAgent does, as one required
// string argument named "__arg1":
//
//	{"type": "object", "properties": {"__arg1": {"type": "string"}}, "required": ["__arg1"]}
//
// and Call passes t the value of "__arg1" when the arguments are a JSON
// object holding it as a string; otherwise it passes the raw arguments,
// again as OpenAIFunctionsAgent does (a model that answers with a bare
// expression still reaches tools.Calculator). With ToolArgValidation in the
// agent, malformed arguments are corrected by the model before they get
// here.
//
// The adapted tool is safe for concurrent use if t is: the agent runs the
// tool calls of one response in parallel.
func FromLangchain(t tools.Tool) toolstage.Tool {
	if t == nil {
		panic("lctool: FromLangchain(nil)")
	}
	return &adapter{t: t, schema: map[string]any{
		"type":       "object",
		"properties": map[string]any{inputKey: map[string]any{"type": "string"}},
		"required":   []any{inputKey},
	}}
}

// inputKey is the argument name langchaingo's OpenAIFunctionsAgent gives a
// tool's single string input.
const inputKey = "__arg1"

type adapter struct {
	t      tools.Tool
	schema map[string]any
}

func (a *adapter) Name() string        { return a.t.Name() }
func (a *adapter) Description() string { return a.t.Description() }

// Schema returns the "__arg1" schema; the same map on every call.
func (a *adapter) Schema() any { return a.schema }

func (a *adapter) Call(ctx context.Context, args string) (string, error) {
	return a.t.Call(ctx, input(args))
}

// input returns the string a langchaingo tool receives for a call's
// arguments: the "__arg1" string of a JSON object, else args unchanged.
func input(args string) string {
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err == nil {
		if s, ok := obj[inputKey].(string); ok {
			return s
		}
	}
	return args
}
