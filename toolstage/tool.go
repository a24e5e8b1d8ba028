package toolstage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// Tool is a tool a stage offers the model.
//
// Implementations must be safe for concurrent use: a stage runs the tool
// calls of one model response in parallel ([WithMaxConcurrency]).
type Tool interface {
	// Name is the function name the model calls.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Schema is the JSON Schema of the arguments, sent to the model as
	// llms.FunctionDefinition.Parameters and used by ToolArgValidation: a
	// *validation.Schema, a map[string]any, json.RawMessage or any value
	// validation.Compile accepts. nil means any JSON object. The value must
	// not change once returned.
	Schema() any
	// Call runs the tool with args, the call's JSON object of arguments (as
	// validated and stripped by the middlewares). An error is reported to
	// the model as the tool's result; it does not end the run.
	Call(ctx context.Context, args string) (string, error)
}

// NewTool returns a [Tool] whose arguments are the Go type T: its schema is
// validation.Typed[T]() (inferred from T's fields and json tags, see
// [validation.Typed]), and fn receives the call's arguments decoded into T with
// encoding/json.
//
// Before fn runs, Call checks the arguments the way ToolArgValidation does —
// schema, decoding into T and T's Validate method ([validation.Validator]),
// after removing empty values (null, {}, []) only where that fixes the call
// ([strip.SchemaAware]) — so fn never sees arguments its schema rejects, with
// or without the middleware. Arguments that still fail are returned as a
// *[validation.Error] naming the tool, which the stage reports to the model in
// the same words ToolArgValidation uses. With ToolArgValidation installed the
// check normally passes at once: it costs one more validation per call.
//
// NewTool panics if T cannot be expressed as a JSON Schema object (see
// validation.Typed) or fn is nil. The Tool is safe for concurrent use if fn
// is.
func NewTool[T any](name, description string, fn func(ctx context.Context, args T) (string, error)) Tool {
	if fn == nil {
		panic(fmt.Sprintf("toolstage: NewTool(%q): nil function", name))
	}
	return &typedTool[T]{name: name, description: description, schema: validation.Typed[T](), fn: fn}
}

type typedTool[T any] struct {
	name, description string
	schema            *validation.Schema
	fn                func(ctx context.Context, args T) (string, error)
}

func (t *typedTool[T]) Name() string        { return t.name }
func (t *typedTool[T]) Description() string { return t.description }

// Schema returns validation.Typed[T](), a *[validation.Schema].
func (t *typedTool[T]) Schema() any { return t.schema }

func (t *typedTool[T]) Call(ctx context.Context, args string) (string, error) {
	res, err := checkArgs(t.name, t.schema, []byte(args))
	if err != nil {
		return "", err
	}
	return t.callChecked(ctx, res.Args, nil)
}

func (t *typedTool[T]) compiledSchema() *validation.Schema { return t.schema }

// callChecked runs fn with raw, arguments already checked against the
// schema (and so decodable into T).
func (t *typedTool[T]) callChecked(ctx context.Context, raw []byte, _ map[string]any) (string, error) {
	var x T
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &x); err != nil {
			// Unreachable for arguments that passed the typed schema, which
			// decodes them into T itself; kept so a failure is never silent.
			return "", fmt.Errorf("toolstage: tool %q: decode arguments: %w", t.name, err)
		}
	}
	return t.fn(ctx, x)
}

// NewSchemaTool returns a [Tool] described by a raw JSON Schema — a
// map[string]any, json.RawMessage, string, *[validation.Schema] or any value
// [validation.Compile] accepts, such as an MCP tool's inputSchema — whose fn
// receives the call's arguments as a map. Numbers in the map are
// json.Number, so that no precision is lost (use its Int64, Float64 or
// String methods). A nil schema accepts any JSON object.
//
// The schema is compiled once, here. Before fn runs, Call checks the
// arguments the way ToolArgValidation does (schema-aware removal of empty
// values, then the schema) and returns a *[validation.Error] naming the tool
// when they fail.
//
// The schema must not be modified after it is passed. NewSchemaTool panics,
// as [NewTool] does for a type that has no schema, if the schema does not
// compile (a tool that accepted anything would be a silent hole) or fn is
// nil; to handle a schema that comes from elsewhere, compile it first with
// [validation.Compile] and pass the *validation.Schema. The Tool is safe for
// concurrent use if fn is.
func NewSchemaTool(name, description string, schema any, fn func(ctx context.Context, args map[string]any) (string, error)) Tool {
	if fn == nil {
		panic(fmt.Sprintf("toolstage: NewSchemaTool(%q): nil function", name))
	}
	t := &schemaTool{name: name, description: description, schema: schema, fn: fn}
	if schema != nil {
		compiled, err := validation.Compile(schema)
		if err != nil {
			panic(fmt.Sprintf("toolstage: NewSchemaTool(%q): the schema does not compile: %v", name, err))
		}
		t.compiled = compiled
	}
	return t
}

type schemaTool struct {
	name, description string
	schema            any
	compiled          *validation.Schema // nil: no schema
	fn                func(ctx context.Context, args map[string]any) (string, error)
}

func (t *schemaTool) Name() string        { return t.name }
func (t *schemaTool) Description() string { return t.description }

// Schema returns the schema as given to [NewSchemaTool].
func (t *schemaTool) Schema() any { return t.schema }

func (t *schemaTool) Call(ctx context.Context, args string) (string, error) {
	res, err := checkArgs(t.name, t.compiled, []byte(args))
	if err != nil {
		return "", err
	}
	return t.fn(ctx, res.Value)
}

func (t *schemaTool) compiledSchema() *validation.Schema { return t.compiled }

// callChecked runs fn with arguments already checked against the schema;
// value is them decoded, or nil to decode them here.
func (t *schemaTool) callChecked(ctx context.Context, raw []byte, value map[string]any) (string, error) {
	if value == nil {
		v, err := exactjson.DecodeObject(raw)
		if err != nil {
			// Unreachable for checked arguments; kept so a failure is never silent.
			return "", fmt.Errorf("toolstage: tool %q: decode arguments: %w", t.name, err)
		}
		value = v
	}
	return t.fn(ctx, value)
}

// checkArgs runs the arguments of a call through the pipeline
// ToolArgValidation uses with its defaults (schema-aware stripping, the
// default coercions) against s (nil: any JSON object), and returns the result, or a
// *[validation.Error] naming tool.
func checkArgs(tool string, s *validation.Schema, raw []byte) (guard.ArgsResult, error) {
	return checkArgsWith(tool, s, raw, guard.ArgsOptions{Strip: strip.SchemaAware, Repair: repair.Coercions()})
}

// checkArgsWith is checkArgs with the pipeline's options given.
func checkArgsWith(tool string, s *validation.Schema, raw []byte, o guard.ArgsOptions) (guard.ArgsResult, error) {
	res := guard.CheckArgs(s, raw, o)
	if res.Err != nil {
		named := *res.Err
		named.Tool = tool
		return res, &named
	}
	return res, nil
}

// compactJSON returns raw without insignificant space, or a copy of raw
// when it is not JSON.
func compactJSON(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return slices.Clone(raw)
	}
	return buf.Bytes()
}
