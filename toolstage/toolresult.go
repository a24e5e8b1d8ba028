package toolstage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolguard/toolguard/validation"
)

// ResultTool is a [Tool] whose calls return a whole [ToolResult] rather
// than its content alone: an Artifact for the program (Outcome.Artifact,
// never sent to the model, LangChain's content_and_artifact) and Direct to
// end the run with the content (LangChain's return_direct), decided by the
// tool, call by call. The tool stage calls CallResult instead of Call,
// with the same checked arguments; Call stays for callers outside a
// stage and returns the result's Content.
//
// The stage finds CallResult through its own wrappers ([Renamed],
// [Idempotent]). A ToolResult may also be set by a [ToolMiddleware], for
// tools that cannot say it themselves.
type ResultTool interface {
	Tool
	// CallResult runs the tool like Call and returns its result. A nil
	// result with a nil error is an error of the call.
	CallResult(ctx context.Context, args string) (*ToolResult, error)
}

// NewResultTool is [NewTool] for a function that returns a whole
// [ToolResult]: the same schema from T, the same check of the arguments
// before fn runs (once per call in a stage), and fn's result as the
// call's result, Artifact and Direct included. It panics if T cannot be
// expressed as a JSON Schema object or fn is nil.
func NewResultTool[T any](name, description string, fn func(ctx context.Context, args T) (*ToolResult, error)) ResultTool {
	if fn == nil {
		panic(fmt.Sprintf("toolstage: NewResultTool(%q): nil function", name))
	}
	return &typedResultTool[T]{name: name, description: description, schema: validation.Typed[T](), fn: fn}
}

type typedResultTool[T any] struct {
	name, description string
	schema            *validation.Schema
	fn                func(ctx context.Context, args T) (*ToolResult, error)
}

func (t *typedResultTool[T]) Name() string        { return t.name }
func (t *typedResultTool[T]) Description() string { return t.description }

// Schema returns validation.Typed[T](), a *[validation.Schema].
func (t *typedResultTool[T]) Schema() any { return t.schema }

func (t *typedResultTool[T]) compiledSchema() *validation.Schema { return t.schema }

// Call runs the tool and returns its result's Content.
func (t *typedResultTool[T]) Call(ctx context.Context, args string) (string, error) {
	res, err := t.CallResult(ctx, args)
	if err != nil {
		return "", err
	}
	return res.Content, nil
}

// CallResult checks args as [NewTool]'s Call does and runs fn.
func (t *typedResultTool[T]) CallResult(ctx context.Context, args string) (*ToolResult, error) {
	res, err := checkArgs(t.name, t.schema, []byte(args))
	if err != nil {
		return nil, err
	}
	return t.callCheckedResult(ctx, res.Args, nil)
}

// callCheckedResult runs fn with raw, arguments already checked against
// the schema.
func (t *typedResultTool[T]) callCheckedResult(ctx context.Context, raw []byte, _ map[string]any) (*ToolResult, error) {
	var x T
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &x); err != nil {
			// Unreachable for arguments that passed the typed schema.
			return nil, fmt.Errorf("toolstage: tool %q: decode arguments: %w", t.name, err)
		}
	}
	res, err := t.fn(ctx, x)
	if err == nil && res == nil {
		return nil, errNoResult
	}
	return res, err
}

// resultToolOf returns the ResultTool t is, or wraps through the stage's
// wrappers; nil if none.
func resultToolOf(t Tool) ResultTool {
	r, _ := findWrapped[ResultTool](t)
	return r
}

// callResultTool runs r with checked arguments: through its unchecked path
// when it is the stage's own, else its CallResult.
func callResultTool(ctx context.Context, r ResultTool, args []byte, value map[string]any) (*ToolResult, error) {
	if u, ok := r.(interface {
		callCheckedResult(ctx context.Context, args []byte, value map[string]any) (*ToolResult, error)
	}); ok {
		return u.callCheckedResult(ctx, args, value)
	}
	res, err := r.CallResult(ctx, string(args))
	if err == nil && res == nil {
		return nil, errNoResult
	}
	return res, err
}
