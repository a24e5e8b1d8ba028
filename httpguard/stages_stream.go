package httpguard

// How the stages' streams map onto the protocols' gates.
//
// A stage that re-asks (ToolArgValidation, ToolCallLimit) gets, per
// logical call, a guard.Stream from the codec (stageStream) and, per
// attempt, a guard.Gate from it: one gateSink, holding one protocol gate
// (sse.go) over all the stage's attempts. Each attempt's request carries
// the sink; the transport's innermost handler feeds the upstream stream's
// events to the sink of the request it sends. A gate writes to the sink of
// the stage outside it, or at the top to the client's stream. The top
// gate is the transport's own (the root), and the outermost stage that
// re-asks uses it as its own gate (a gate of its own would only repeat the
// root's work):
//
//	upstream ─▶ ToolArgValidation's gate ─▶ ToolCallLimit's gate = root gate ─▶ client
//
// Each gate passes text of its first attempt on at once and holds tool-call
// parts until its stage delivers the attempt (Gate.Deliver: gate.accept);
// an attempt that is not delivered is rejected when the stage starts its
// next one (gate.reject). A stage that hands an attempt's response on as
// it is, without delivering it (ToolArgValidation's answer without tool
// calls), has taken it all the same: the next gate the response reaches
// delivers it first to the gates inside that it came through, so their
// held end (finish reason, usage, closing events) reaches the client. So
// a stage outside holds what an inner stage accepted until it accepts it
// too, and the client reads one well-formed stream whatever the stack. The
// transport delivers the logical call's answer to the root gate, which adds
// what only the end of the call decides: a stand-in answer streamed in
// place of the held calls, or the guard's error event when the call fails
// after the stream began; an answer the root gate's stage delivered already
// is not delivered again.

// An upstream stream that fails part-way and is retried (ModelRetry) is
// dropped: when nothing has reached the client yet, every gate from the
// request's to the root starts afresh (what they held is dropped, the
// events that only open the client's stream too), so the client reads the
// retried stream as if it were the first; when something has (only with
// guard.WithRetryStreamed), the retried stream counts as a later attempt
// of the nearest gate, whose text is not streamed again.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/toolguard/toolguard/guard"
)

// stageStream is a stage's guard.Stream over one logical call.
type stageStream struct {
	parent *gateSink // where the stage's output goes
	client *clientStream
	sink   *gateSink // made by the first Attempt
}

// Attempt returns a request whose stream goes through the stage's gate,
// and the gate. The first call makes the gate; each later call rejects the
// attempt before, which the stage did not deliver. The gate holds tool
// calls only: what hold says beyond that does not apply at the wire (the
// transport offers no stage that holds all).
func (s *stageStream) Attempt(ctx context.Context, req *request, _ guard.Hold) (context.Context, *request, guard.Gate[*response]) {
	if s.sink == nil {
		if s.parent.parent == nil && !s.parent.claimed {
			// The outermost stage's gate is the root's (see the top of
			// this file). A later logical call of a stage under the root
			// (a retry outside it) gets a gate of its own.
			s.parent.claimed = true
			s.sink = s.parent
		} else {
			s.sink = newGateSink(req.proto, s.parent, s.client)
		}
	} else {
		s.sink.nextAttempt()
	}
	r := *req
	r.sink = s.sink
	return ctx, &r, s.sink
}

// Watch returns req as it is, and whether any event reached the client
// since: what a gate holds does not count.
func (s *stageStream) Watch(_ context.Context, req *request) (*request, func() bool) {
	start := s.client.events.Load()
	return req, func() bool { return s.client.events.Load() > start }
}

// gateSink is one gate over the attempts of one logical call: a stage's,
// or the transport's own at the root. It is driven by one goroutine, the
// logical call's.
type gateSink struct {
	proto wireProtocol
	gate  streamGate
	// parent is the sink outside, where the gate writes; nil at the root,
	// whose gate writes to client.
	parent *gateSink
	client *clientStream
	// fed: the current attempt got events.
	fed bool
	// first: the gate is on its first attempt.
	first bool
	// delivered: the current attempt was delivered (the gate accepted it).
	delivered bool
	// claimed: at the root, a stage's stream uses this sink as its own.
	claimed bool
	// asm and asmCalls are the current attempt's assembled response and
	// its calls, once read; nil until then and after the next event.
	asm      []byte
	asmCalls []wireCall
}

// assembledResponse returns the current attempt's assembled response,
// assembled once per event.
func (s *gateSink) assembledResponse() ([]byte, error) {
	if s.asm == nil {
		asm, err := s.gate.response()
		if err != nil {
			return nil, err
		}
		s.asm = asm
	}
	return s.asm, nil
}

// assembledCalls returns the calls of the current attempt, read once,
// from the assembler's own parse of the events (assembler.calls). An
// error is the attempt's assembly failing (errTooLarge, a stream that is
// not readable), or an *unguardableError: a response of a shape the guard
// does not read.
func (s *gateSink) assembledCalls() ([]wireCall, error) {
	if s.asmCalls != nil {
		return s.asmCalls, nil
	}
	calls, err := s.gate.current().calls()
	if err != nil {
		return nil, err
	}
	if calls == nil {
		calls = []wireCall{}
	}
	s.asmCalls = calls
	return calls, nil
}

// forget drops the assembled response: the attempt changed.
func (s *gateSink) forget() { s.asm, s.asmCalls = nil, nil }

// newGateSink returns a sink whose gate writes to parent, or to client
// when parent is nil.
func newGateSink(p wireProtocol, parent *gateSink, client *clientStream) *gateSink {
	s := &gateSink{proto: p, parent: parent, client: client}
	s.reset()
	return s
}

// reset gives the sink a fresh gate, on its first attempt.
func (s *gateSink) reset() {
	s.gate = s.proto.newGate(gateWriter{s})
	s.fed, s.first, s.delivered = false, true, false
	s.forget()
}

// gateWriter is where a sink's gate writes: the sink outside, or the
// client, events whole.
type gateWriter struct{ s *gateSink }

func (w gateWriter) putEvent(ev streamEvent) error {
	if w.s.parent != nil {
		return w.s.parent.putEvent(ev)
	}
	return w.s.client.putEvent(ev)
}

// Write is never called: writeEvent hands a gateWriter events whole.
func (gateWriter) Write([]byte) (int, error) {
	return 0, errors.New("httpguard: gateWriter takes events, not bytes")
}

// putEvent feeds the current attempt one event written by the gate of the
// stage inside.
func (s *gateSink) putEvent(ev streamEvent) error {
	_, err := s.event(ev)
	return err
}

// event feeds the current attempt one event; done reports the end of the
// attempt's stream.
func (s *gateSink) event(ev streamEvent) (done bool, err error) {
	s.fed = true
	s.forget()
	return s.gate.event(ev)
}

// begin tells the sink that an upstream stream starts for its current
// attempt. If an earlier stream of the same attempt fed it (a stream that
// failed, which ModelRetry repeats), what that stream left is dropped (see
// the top of this file).
func (s *gateSink) begin() {
	if !s.fed {
		return
	}
	if s.client.events.Load() == 0 {
		for x := s; x != nil; x = x.parent {
			x.reset()
		}
		s.client.held = nil
		return
	}
	s.gate.reject()
	s.fed, s.first, s.delivered = false, false, false
	s.forget()
}

// nextAttempt rejects the current attempt: the stage asks again.
func (s *gateSink) nextAttempt() {
	s.gate.reject()
	s.first, s.fed, s.delivered = false, false, false
	s.forget()
}

// Deliver implements guard.Gate: the stage accepts resp. The gate accepts
// what it assembled of the attempt, with the calls' arguments as resp has
// them (the stage's cleaning, and that of the stages inside, which reached
// the gate as their accepted streams). A stand-in answer is streamed in
// place of what the attempt held, as a later attempt's answer. A response
// the transport could not read cannot be streamed: an error.
func (s *gateSink) Deliver(_ context.Context, resp *response) (*response, error) {
	if resp.pass != nil {
		return nil, &passError{resp: resp.pass}
	}
	if err := s.deliverInside(resp); err != nil {
		return nil, err
	}
	return s.deliver(resp)
}

// deliverInside delivers resp to the gates inside s it went through
// whose stage returned it without delivering it: a stage that takes an
// answer as it is (ToolArgValidation's answer without tool calls) hands it
// on without Deliver, and its gate still holds the answer's end (the
// finish reason, the usage, the closing events), which the client must
// read. The innermost goes first, since each writes into the next.
func (s *gateSink) deliverInside(resp *response) error {
	var inside []*gateSink
	x := resp.origin
	for ; x != nil && x != s; x = x.parent {
		inside = append(inside, x)
	}
	if x != s {
		return nil // resp did not come through s
	}
	for _, in := range inside {
		if in.delivered {
			continue
		}
		if _, err := in.deliver(resp); err != nil {
			return err
		}
	}
	return nil
}

// deliver is Deliver for s itself: once per attempt (a stage's gate that
// is the root's is delivered by the stage, then by the transport).
func (s *gateSink) deliver(resp *response) (*response, error) {
	if s.delivered {
		return resp, nil
	}
	if !resp.standIn && s.fed {
		ok, err := s.release(resp)
		if err != nil {
			return nil, err
		}
		if ok {
			s.delivered = true
			return resp, nil
		}
	}
	body, err := resp.content()
	if err != nil {
		return nil, err
	}
	if resp.standIn || !s.fed {
		if s.fed {
			s.gate.reject()
			s.first = false
		}
	} else if body, err = s.assembled(resp); err != nil {
		return nil, err
	}
	if err := s.gate.accept(body); err != nil {
		return nil, err
	}
	s.delivered = true
	return resp, nil
}

// release ends the gate's first attempt with what it held, as the
// upstream sent it, when the gate can (streamGate.release) and resp's
// calls are the attempt's, unchanged: nothing is assembled or written
// anew.
func (s *gateSink) release(resp *response) (bool, error) {
	if !s.first {
		return false, nil
	}
	have, err := s.assembledCalls()
	if err != nil {
		return false, nil
	}
	want, err := resp.toolCalls()
	if err != nil || len(want) != len(have) {
		return false, nil
	}
	for i := range want {
		if want[i].Name != have[i].Name || string(want[i].Args) != string(have[i].Args) {
			return false, nil
		}
	}
	return s.gate.release()
}

// assembled returns the attempt as the gate assembled it, with the calls'
// arguments of resp, whose calls are the same, in the same order; resp
// itself when they are not (the gate then accepts resp).
func (s *gateSink) assembled(r *response) ([]byte, error) {
	resp, err := r.content()
	if err != nil {
		return nil, err
	}
	asm, err := s.assembledResponse()
	if err != nil {
		return nil, err
	}
	have, err := s.assembledCalls()
	if err != nil {
		return resp, nil
	}
	want, err := r.toolCalls()
	if err != nil || len(want) != len(have) {
		return resp, nil
	}
	args := make([][]byte, len(want))
	changed := false
	for i := range want {
		if want[i].Name != have[i].Name {
			return resp, nil
		}
		if string(want[i].Args) != string(have[i].Args) {
			if !json.Valid(want[i].Args) {
				return resp, nil
			}
			args[i], changed = want[i].Args, true
		}
	}
	if !changed {
		return asm, nil
	}
	return s.proto.accept(asm, args)
}
