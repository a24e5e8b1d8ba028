package validation

// IdentityLen returns how many identities the cache remembers.
func (c *Cache) IdentityLen() int { return c.byID.Len() }
