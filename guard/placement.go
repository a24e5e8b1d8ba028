package guard

import (
	"context"
	"errors"
	"fmt"
)

// ErrLimitInsideValidation is wrapped by the Err of the [EventMisconfigured]
// that a [ToolCallLimit] placed inside a [ToolArgValidation] reports.
var ErrLimitInsideValidation = errors.New("guard: ToolCallLimit is inside ToolArgValidation")

// validationScopeKey marks a context that passed through ToolArgValidation
// on its way to the model.
type validationScopeKey struct{}

// insideValidation returns a copy of ctx marked as passing through
// ToolArgValidation.
func insideValidation(ctx context.Context) context.Context {
	if ctx.Value(validationScopeKey{}) != nil {
		return ctx
	}
	return context.WithValue(ctx, validationScopeKey{}, true)
}

// checkPlacement reports, once per [ToolCallLimit] value, a limiter placed
// inside a ToolArgValidation: it then counts the calls of responses that
// validation goes on to reject, and counts their corrections again, so the
// run's budget is spent on calls that never run.
func (w *wiringChecks) checkPlacement(ctx context.Context, l *toolCallLimit) {
	if w.placement.Load() || ctx.Value(validationScopeKey{}) == nil || !w.placement.CompareAndSwap(false, true) {
		return
	}
	err := fmt.Errorf("%w: it counts calls that validation rejects; place it outside: "+
		"Wrap(model, ToolCallLimit(...), ToolArgValidation(...), ModelRetry(...))", ErrLimitInsideValidation)
	reportLoud(ctx, l.cfg.events, Event{Kind: EventMisconfigured, Middleware: limitName, Tool: l.cfg.tool, Err: err})
}
