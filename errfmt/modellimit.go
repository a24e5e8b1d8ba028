package errfmt

import "fmt"

// PrefixModelLimitReached starts ModelCallLimit's ExitEnd answer.
const PrefixModelLimitReached = "Model call limit reached"

// ModelCallLimit describes a model call limit that a call would exceed, for
// the answer that ends a run at it.
type ModelCallLimit struct {
	Scope string // what the limit counts over: "run" or "thread"
	Limit int    // the limit
	Count int    // model calls made in the scope before this one
}

// Reached is the answer that ends a run at the limit (ModelCallLimit's
// ExitEnd): "Model call limit reached: run limit exceeded (5/5 calls)."
func (l ModelCallLimit) Reached() string {
	return fmt.Sprintf("%s: %s limit exceeded (%d/%d calls).", PrefixModelLimitReached, l.Scope, l.Count, l.Limit)
}
