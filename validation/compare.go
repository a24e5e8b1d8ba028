package validation

// Improves reports whether after, the result of validating a changed value,
// is a strict improvement on before, the result for the value as it was:
// every violation of after is one of before, compared by path, keyword and
// message (the value a violation shows changes with the value without the
// violation being a new one), and before has more. Both must be nil or a
// *Error that lists every violation (Omitted == 0); anything else is never
// an improvement. The strip and repair engines keep a change only when it
// improves.
func Improves(after, before error) bool {
	b, ok := complete(before)
	if !ok || len(b) == 0 {
		return false
	}
	a, ok := complete(after)
	if !ok {
		return false
	}
	type key struct{ path, keyword, message string }
	in := make(map[key]bool, len(b))
	for _, v := range b {
		in[key{v.Path, v.Keyword, v.Message}] = true
	}
	seen := make(map[key]bool, len(a))
	for _, v := range a {
		k := key{v.Path, v.Keyword, v.Message}
		if !in[k] {
			return false
		}
		seen[k] = true
	}
	return len(seen) < len(in)
}

// complete returns the violations of err (none for nil) and whether err is
// nil or a *Error listing all of them.
func complete(err error) ([]Violation, bool) {
	if err == nil {
		return nil, true
	}
	e, ok := err.(*Error)
	if !ok || e.Omitted > 0 {
		return nil, false
	}
	return e.Violations, true
}
