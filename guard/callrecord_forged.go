package guard

import (
	"context"
	"slices"
	"strings"
)

// forgedCall is what the record keeps of one call's forged injected
// arguments.
type forgedCall struct {
	tool  string
	paths []string
}

// recordForged notes, in the record ctx carries, that ToolArgValidation
// dropped the values the model sent for injected arguments (paths) from the
// call id of tool it hands on, so that the agent reports the security event
// once, with the tool call it concerns. It reports false when ctx carries
// no record (no agent run): the caller then reports the event itself.
func recordForged(ctx context.Context, id, tool string, paths []string) bool {
	l, _ := ctx.Value(callRecordKey{}).(*CallRecord)
	if l == nil || id == "" {
		return false
	}
	l.mu.Lock()
	if l.forged == nil {
		l.forged = make(map[string]forgedCall)
	}
	l.forged[id] = forgedCall{tool: tool, paths: paths}
	l.mu.Unlock()
	return true
}

// Forged returns the paths recorded for call id by RecordForged, and
// forgets them. A nil record has none.
func (l *CallRecord) Forged(id string) []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.forged[id]
	delete(l.forged, id)
	return f.paths
}

// ForgedCall is a call's forged injected arguments that no tool call
// claimed (see [CallRecord.Unclaimed]).
type ForgedCall struct {
	ID, Tool string
	Paths    []string
}

// Unclaimed returns, sorted by id, and forgets the forged arguments
// recorded for calls other than ids: calls of a response that a middleware
// outside ToolArgValidation discarded after it was handed on (a limit's
// re-ask), which the agent never runs and so would never report. A nil
// record has none.
func (l *CallRecord) Unclaimed(ids []string) []ForgedCall {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ForgedCall
	for id, f := range l.forged {
		if !slices.Contains(ids, id) {
			out = append(out, ForgedCall{ID: id, Tool: f.tool, Paths: f.paths})
			delete(l.forged, id)
		}
	}
	slices.SortFunc(out, func(a, b ForgedCall) int { return strings.Compare(a.ID, b.ID) })
	return out
}
