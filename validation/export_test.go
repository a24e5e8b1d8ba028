package validation

// IdentityLen returns how many identities the cache remembers.
func (c *Cache) IdentityLen() int { return c.byID.Len() }

// MaxValuesOf returns how many values s accepts in arguments.
func MaxValuesOf(s *Schema) int { return s.maxValues }

// FastVerdict returns the fast path's verdict on a JSON value (any value,
// not only an object) for s: "pass", "fail", "defer", or "unsupported"
// when s is outside the fast path.
func FastVerdict(s *Schema, data []byte) string {
	if s.fast == nil {
		return "unsupported"
	}
	limit := s.maxValues
	if limit == 0 {
		limit = MaxValues
	}
	return [...]string{pass: "pass", fail: "fail", defer_: "defer"}[fastValidate(s.fast, data, limit)]
}

// ValidateJSONReference is ValidateJSON without the fast path.
func ValidateJSONReference(s *Schema, args []byte) error {
	if _, e := s.parseReference(args); e != nil {
		return e
	}
	return nil
}

// ParseReference is Parse without the fast path.
func ParseReference(s *Schema, args []byte) (map[string]any, *Error) {
	return s.parseReference(args)
}
