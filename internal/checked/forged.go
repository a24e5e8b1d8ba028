package checked

import "context"

// RecordForged notes, in the ledger ctx carries, that ToolArgValidation
// dropped the values the model sent for injected arguments (paths) from the
// call id it hands on, so that the agent reports the security event once,
// with the tool call it concerns. It reports false when ctx carries no
// ledger (no agent run): the caller then reports the event itself.
func RecordForged(ctx context.Context, id string, paths []string) bool {
	l, _ := ctx.Value(ledgerKey{}).(*Ledger)
	if l == nil || id == "" {
		return false
	}
	l.mu.Lock()
	if l.forged == nil {
		l.forged = make(map[string][]string)
	}
	l.forged[id] = paths
	l.mu.Unlock()
	return true
}

// Forged returns the paths recorded for call id by RecordForged, and
// forgets them. A nil ledger has none.
func (l *Ledger) Forged(id string) []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	paths := l.forged[id]
	delete(l.forged, id)
	return paths
}
