// Package checked lets ToolArgValidation tell an agent loop which tool calls
// it has already validated against the agent's own tool schemas, so that the
// loop's tool stage does not validate (and decode) them a second time.
//
// The agent starts a ledger per run ([With]); ToolArgValidation records each
// call it accepts whose schema came from the run's tool schemas ([Record]);
// the agent runs a call unchecked only when [Ledger.Has] finds the very
// same id, tool name and argument bytes. Anything else — a call nothing
// validated, arguments a tool middleware replaced, a schema given to the
// middleware some other way — is checked again by the agent.
package checked

import (
	"context"
	"sync"
)

// Ledger is one run's record of validated calls. It is safe for concurrent
// use.
type Ledger struct {
	mu     sync.Mutex
	calls  map[string]call       // by call id
	forged map[string]forgedCall // by call id: forged injected arguments dropped (forged.go)
}

type call struct{ name, args string }

type ledgerKey struct{}

// With returns a copy of ctx carrying a new, empty ledger, and the ledger.
func With(ctx context.Context) (context.Context, *Ledger) {
	l := &Ledger{}
	return context.WithValue(ctx, ledgerKey{}, l), l
}

// Record notes, in the ledger ctx carries (if any), that the call id of tool
// name with exactly args was validated against the run's schema of name.
func Record(ctx context.Context, id, name, args string) {
	l, _ := ctx.Value(ledgerKey{}).(*Ledger)
	if l == nil || id == "" {
		return
	}
	l.mu.Lock()
	if l.calls == nil {
		l.calls = make(map[string]call)
	}
	l.calls[id] = call{name: name, args: args}
	l.mu.Unlock()
}

// Has reports whether the call id of tool name with exactly args was
// recorded. A nil ledger has nothing.
func (l *Ledger) Has(id, name, args string) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.calls[id]
	return ok && c.name == name && c.args == args
}

// Forget removes the calls recorded so far; the agent calls it after each
// batch so a run's ledger never holds more than one turn.
func (l *Ledger) Forget() {
	if l == nil {
		return
	}
	l.mu.Lock()
	clear(l.calls)
	clear(l.forged)
	l.mu.Unlock()
}
