package lctool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// ToLangchain returns t as a langchaingo tools.Tool, for langchaingo's
// agents.Executor, with t's name and description. Its Call passes its input
// to t.Call unchanged: with [OfferSchemas] the model sees t's own schema, so
// OpenAIFunctionsAgent hands over the call's JSON arguments as they are.
// A typed tool ([toolstage.NewTool]) checks and decodes them; its error (the
// Executor ends the run on a tool error) is rare once ToolArgValidation has
// had the model correct them.
//
// The tool is safe for concurrent use if t is. ToLangchain panics if t has
// injected arguments ([validation.InjectedKeyword]: a field tagged
// `toolguard:"inject"`, toolstage.InjectArgs): agents.Executor cannot supply
// them, so the tool would run with whatever the model sent for them.
func ToLangchain(t toolstage.Tool) tools.Tool {
	if t == nil {
		panic("lctool: ToLangchain(nil)")
	}
	if names := injectedArgs(t); len(names) > 0 {
		panic(fmt.Sprintf("lctool: ToLangchain(%q): the tool has injected arguments %q, which agents.Executor cannot supply: run it in an agent.Agent with toolstage.Inject", t.Name(), names))
	}
	return langchainTool{t}
}

// injectedArgs returns the properties t's schema marks injected, sorted.
func injectedArgs(t toolstage.Tool) []string {
	var text []byte
	switch s := parameters(t.Schema()).(type) {
	case string:
		text = []byte(s)
	case json.RawMessage:
		text = s
	case []byte:
		text = s
	default:
		text, _ = json.Marshal(s)
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(text, &schema) != nil {
		return nil
	}
	var names []string
	for name, p := range schema.Properties {
		var marks map[string]any
		if json.Unmarshal(p, &marks) == nil && marks[validation.InjectedKeyword] == true {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

type langchainTool struct{ t toolstage.Tool }

// SchemaFor returns t, an existing langchaingo tool, as an [toolstage.Tool] with
// the JSON Schema of its arguments given beside it, for [OfferSchemas]:
//
//	executor := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(
//		middleware.Wrap(model,
//			lctool.OfferSchemas(lctool.SchemaFor(refund, validation.Typed[RefundArgs]())),
//			middleware.ToolArgValidation(),
//		),
//		[]tools.Tool{refund}, // unchanged
//	))
//
// The Executor keeps running t itself; SchemaFor only tells the model stage
// what t takes, so the model is offered the schema and ToolArgValidation
// validates (and re-asks) against it instead of langchaingo's one-string
// placeholder ({"__arg1": string}). The model then sends a JSON object of
// arguments, which OpenAIFunctionsAgent hands to t.Call as they are (after
// ToolArgValidation's repairs): use it for tools that read a JSON object;
// a tool that takes one plain string (tools.Calculator) needs no schema.
// The returned tool's Call passes its arguments to t.Call the same way, so
// it also runs in an agent.Agent. schema is any form [validation.Compile]
// takes; SchemaFor panics if t or schema is nil.
func SchemaFor(t tools.Tool, schema any) toolstage.Tool {
	if t == nil || schema == nil {
		panic("lctool: SchemaFor(nil tool or nil schema)")
	}
	return schemaTool{t: t, schema: schema}
}

type schemaTool struct {
	t      tools.Tool
	schema any
}

func (s schemaTool) Name() string        { return s.t.Name() }
func (s schemaTool) Description() string { return s.t.Description() }
func (s schemaTool) Schema() any         { return s.schema }
func (s schemaTool) Call(ctx context.Context, args string) (string, error) {
	return s.t.Call(ctx, args)
}

func (l langchainTool) Name() string        { return l.t.Name() }
func (l langchainTool) Description() string { return l.t.Description() }
func (l langchainTool) Call(ctx context.Context, input string) (string, error) {
	return l.t.Call(ctx, input)
}

// OfferSchemas returns a middleware that offers the model each of ts with
// its own JSON Schema, in place of the one string argument
// ({"__arg1": string}) that langchaingo's OpenAIFunctionsAgent declares for
// every tool. Without it, a model driven by an unchanged agents.Executor is
// told that every tool takes a string, ToolArgValidation has nothing typed
// to check, and a refund tool receives "19.99" for a number. With it, the
// model is offered the typed schema, ToolArgValidation validates against it
// (a typed tool's Validate hook included) and re-asks, and the Executor
// passes the corrected JSON to the tool ([ToLangchain]):
//
//	ts := []toolstage.Tool{refund, mcpTools[0]} // toolstage.NewTool, mcptool, NewSchemaTool…
//	lcTools := make([]tools.Tool, len(ts))
//	for i, t := range ts {
//		lcTools[i] = lctool.ToLangchain(t)
//	}
//	llm := middleware.Wrap(model,
//		lctool.OfferSchemas(ts...), // before ToolArgValidation: it validates what the model is offered
//		middleware.ToolArgValidation(),
//		middleware.ModelRetry(),
//	)
//	executor := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(llm, lcTools))
//
// An existing tools.Tool that reads a JSON object is given its schema with
// [SchemaFor] and stays in the Executor unchanged.
//
// In each request, a tool or function (OpenAIFunctionsAgent sends the
// deprecated llms.WithFunctions) named as one of ts gets that tool's schema
// as its Parameters, in the map form every provider accepts; other tools are
// left as they are. Place it before (outside) ToolArgValidation. It panics
// if a tool is nil, two share a name, or a tool has injected arguments
// (see [ToLangchain]). The middleware is safe for concurrent use.
func OfferSchemas(ts ...toolstage.Tool) middleware.Middleware {
	o := &offer{params: make(map[string]any, len(ts)), schemas: make(map[string]any, len(ts))}
	for i, t := range ts {
		if t == nil {
			panic(fmt.Sprintf("lctool: OfferSchemas: tool %d is nil", i))
		}
		name := t.Name()
		if names := injectedArgs(t); len(names) > 0 {
			panic(fmt.Sprintf("lctool: OfferSchemas: tool %q has injected arguments %q, which agents.Executor cannot supply: run it in an agent.Agent with toolstage.Inject", name, names))
		}
		if _, dup := o.params[name]; dup {
			panic(fmt.Sprintf("lctool: OfferSchemas: two tools are named %q", name))
		}
		o.params[name] = parameters(t.Schema())
		o.schemas[name] = t.Schema()
	}
	return o
}

type offer struct {
	params  map[string]any // name -> Parameters sent to the model
	schemas map[string]any // name -> the tool's own schema, for ToolArgValidation
}

func (o *offer) WrapModelCall(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
		opts := req.CallOptions()
		tools, toolsChanged := o.tools(opts.Tools)
		functions, functionsChanged := o.functions(opts.Functions)
		if !toolsChanged && !functionsChanged {
			return next(ctx, req)
		}
		callOpts := slices.Clip(req.Options) // appended to: never into the caller's array
		if toolsChanged {
			callOpts = append(callOpts, llms.WithTools(tools))
		}
		if functionsChanged {
			callOpts = append(callOpts, llms.WithFunctions(functions))
		}
		// The original schemas keep a typed tool's Validate hook, which the
		// map sent to the model has lost.
		ctx = guard.WithToolSchemas(ctx, o.schemas)
		return next(ctx, &middleware.Request{Messages: req.Messages, Options: callOpts})
	}
}

// tools returns ts with the Parameters of the offered tools replaced, and
// whether any was.
func (o *offer) tools(ts []llms.Tool) ([]llms.Tool, bool) {
	var out []llms.Tool
	for i, t := range ts {
		if t.Function == nil {
			continue
		}
		p, ok := o.params[t.Function.Name]
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(ts)
		}
		fn := *t.Function
		fn.Parameters = p
		out[i].Function = &fn
	}
	return out, out != nil
}

// functions is tools for the deprecated llms.FunctionDefinition list.
func (o *offer) functions(fs []llms.FunctionDefinition) ([]llms.FunctionDefinition, bool) {
	var out []llms.FunctionDefinition
	for i, f := range fs {
		p, ok := o.params[f.Name]
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(fs)
		}
		out[i].Parameters = p
	}
	return out, out != nil
}

// parameters returns a tool's schema in the form sent as Parameters: a
// *validation.Schema as its map (langchaingo's googleai provider takes
// nothing else), nil as an empty object schema, anything else as it is.
func parameters(schema any) any {
	switch s := schema.(type) {
	case nil:
		return map[string]any{"type": "object", "properties": map[string]any{}}
	case *validation.Schema:
		if s == nil {
			return parameters(nil)
		}
		return s.Map()
	}
	return schema
}
