package validation

// The one rule by which toolguard's engines (strip, repair) decide to keep a
// change they made to a call's arguments: the change must remove
// violations and add none.

// Improves reports whether after, the result of validating a changed value,
// is a strict improvement on before, the violations of the value as it was:
// after lists every violation (Omitted == 0), each of them is one of before,
// compared by path, keyword and message (the value a violation shows changes
// with the value without the violation being a new one), and before has
// more. A nil after improves on any non-empty before.
func Improves(after *Error, before []Violation) bool {
	if len(before) == 0 || (after != nil && after.Omitted > 0) {
		return false
	}
	if after == nil {
		return true
	}
	type key struct{ path, keyword, message string }
	in := make(map[key]bool, len(before))
	for _, v := range before {
		in[key{v.Path, v.Keyword, v.Message}] = true
	}
	seen := make(map[key]bool, len(after.Violations))
	for _, v := range after.Violations {
		k := key{v.Path, v.Keyword, v.Message}
		if !in[k] {
			return false
		}
		seen[k] = true
	}
	return len(seen) < len(in)
}

// TryChange applies change to v, which before violates s as listed in before, and
// validates v again. It keeps the change when the result [Improves] on
// before and returns the violations that remain (none when v is now valid)
// and true; otherwise it calls the undo function change returned and
// returns before and false.
func (s *Schema) TryChange(v any, before []Violation, change func() (undo func())) ([]Violation, bool) {
	undo := change()
	after := s.Check(v)
	if !Improves(after, before) {
		undo()
		return before, false
	}
	if after == nil {
		return nil, true
	}
	return after.Violations, true
}
