package toolstage

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/toolguard/toolguard/guard"
)

// CallInfo is what a tool or a tool middleware can know about the call it
// is handling (LangGraph's ToolRuntime). See [CallFrom].
type CallInfo struct {
	// ID is the call's id; Tool the tool's name as sent to the model;
	// Thread the thread id the run's context names
	// ([guard.WithThread]), "" if none.
	ID, Tool, Thread string
	// Attempt is 1 for the first run of the call, then 2, … when
	// [ToolRetry] runs it again.
	Attempt int
}

// callState is what the tool stage keeps of one call in its context.
type callState struct {
	info      CallInfo
	modelArgs string    // the arguments as the model stage left them
	stageArgs string    // the arguments the tool stage starts with (prepareArgs)
	tool      Tool      // the stage's tool of that name
	checked   bool      // stageArgs passed the tool's schema (the model stage's check, or precheck)
	out       *callDone // shared by every attempt of the call
	gate      callGate  // what the turn's stages say of the call (turnstage.go)
}

// callDone is what the innermost handler reports of a call, and what the
// tool stage's check decoded of it for the tool. A tool middleware may run
// attempts of one call concurrently (a hedge), so it is guarded.
type callDone struct {
	mu   sync.Mutex
	ran  bool            // the tool was called
	args json.RawMessage // the arguments it was called with, last attempt
	// value is the stage's arguments as precheck decoded them, for the
	// first attempt whose tool runs with them (takeValue): the tool need
	// not decode them again. A tool may change the map it is given, so
	// it goes to one attempt only.
	value map[string]any
}

// keepValue keeps v, the stage's arguments decoded, for takeValue.
func (d *callDone) keepValue(v map[string]any) {
	d.mu.Lock()
	d.value = v
	d.mu.Unlock()
}

// takeValue returns the value keepValue kept, once; nil after.
func (d *callDone) takeValue() map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.value
	d.value = nil
	return v
}

// record notes that the tool was called with args.
func (d *callDone) record(args json.RawMessage) {
	d.mu.Lock()
	d.ran, d.args = true, args
	d.mu.Unlock()
}

// get returns whether the tool was called, and with which arguments last.
func (d *callDone) get() (ran bool, args json.RawMessage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ran, d.args
}

type callStateKey struct{}

func withCallState(ctx context.Context, st *callState) context.Context {
	return context.WithValue(ctx, callStateKey{}, st)
}

func callStateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(callStateKey{}).(*callState)
	return st
}

// withAttempt returns ctx whose call is at attempt n.
func withAttempt(ctx context.Context, n int) context.Context {
	st := callStateFrom(ctx)
	if st == nil {
		return ctx
	}
	next := *st
	next.info.Attempt = n
	return withCallState(ctx, &next)
}

// CallFrom returns the call that ctx is running, inside a tool's Call or a
// [ToolMiddleware] of a stage's batch; false elsewhere.
func CallFrom(ctx context.Context) (CallInfo, bool) {
	st := callStateFrom(ctx)
	if st == nil {
		return CallInfo{}, false
	}
	return st.info, true
}

// ReportEvent reports e from the tool stage ([guard.Report]): to the
// observers ctx carries (otelguard adds it to the tool call's execute_tool
// span) and to the context's handler (the stage's [WithEventHandler], or
// [guard.WithEvents]); without a handler, an event that means a protection
// did not hold (forged_argument, approval_refused) is logged at Warn. A
// tool middleware calls it with the context it was given; e.Tool, e.CallID
// and e.Attempt are filled from [CallFrom] when zero, and e.Middleware is
// "toolstage" when empty.
func ReportEvent(ctx context.Context, e guard.Event) {
	if st := callStateFrom(ctx); st != nil {
		if e.Tool == "" {
			e.Tool = st.info.Tool
		}
		if e.CallID == "" {
			e.CallID = st.info.ID
		}
		if e.Attempt == 0 {
			e.Attempt = st.info.Attempt
		}
	}
	if e.Middleware == "" {
		e.Middleware = "toolstage"
	}
	guard.Report(ctx, e)
}
