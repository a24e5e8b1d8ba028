package guard

import (
	"context"
	"encoding/json"
	"strings"
)

// injectedArgsKey is the context key of [WithInjectedArgs].
type injectedArgsKey struct{}

// WithInjectedArgs returns a copy of ctx that names, for each tool (by the
// name the model calls), its injected arguments: top-level properties the
// program supplies at run time (the caller's user id, the call's id) that
// the model must neither see nor set. Package agent does this on every run
// for the tools it was given with injected arguments; code that injects
// values itself (an agents.Executor whose tools read the user from the
// context) can do the same.
//
// Knowing them, [ToolArgValidation] removes any value the model sends for
// such a property from the call (written back into the response, as it
// writes back stripped values) and reports [EventForgedArgument] (inside
// an agent's run, the agent reports it with the tool call); its
// feedback, events and errors never quote such a value, and never ask the
// model for the property. otelguard leaves those values out of the content
// it records. The schema sent to the model should not declare them (package
// agent sends a schema without them); a schema that does is still enforced
// without them. injected must not be modified after the call.
func WithInjectedArgs(ctx context.Context, injected map[string][]string) context.Context {
	return context.WithValue(ctx, injectedArgsKey{}, injected)
}

// InjectedArgsFrom returns the injected arguments of tool that ctx names
// ([WithInjectedArgs]); nil when it names none. A tool is found by its
// name, else as langchaingo's agents.Executor finds tools (strings.ToUpper
// of both names), since the Executor runs a call of "REFUND" with the tool
// "refund". The slice is shared: do not modify it.
func InjectedArgsFrom(ctx context.Context, tool string) []string {
	m, _ := ctx.Value(injectedArgsKey{}).(map[string][]string)
	if names, ok := m[tool]; ok {
		return names
	}
	for name, names := range m {
		if sameTool(tool, name) {
			return names
		}
	}
	return nil
}

// ArgsToRecord returns the arguments of a call of tool as an observer that
// records content (otelguard's WithCaptureContent) may keep them: without
// the values the model sent for the tool's injected arguments
// ([InjectedArgsFrom]); false when the tool has injected arguments and args
// are not a JSON object, which may hide a value [DropInjected] cannot
// remove: such arguments are not to be recorded.
func ArgsToRecord(ctx context.Context, tool, args string) (string, bool) {
	injected := InjectedArgsFrom(ctx, tool)
	if len(injected) == 0 {
		return args, true
	}
	args, _ = DropInjected(args, injected)
	t := strings.TrimSpace(args)
	return args, len(t) > 0 && t[0] == '{' && json.Valid([]byte(t))
}
