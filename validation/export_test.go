package validation

// IdentityLen returns how many identities the cache remembers.
func (c *Cache) IdentityLen() int { return c.byID.Len() }

// MaxValuesOf returns how many values s accepts in arguments.
func MaxValuesOf(s *Schema) int { return s.maxValues }
