package httpguard

// Streaming at the wire.
//
// A stream's bytes are cut into events by its protocol's framing
// (framing.go): Bedrock Converse's is an AWS event stream (eventstream.go);
// the others' are server-sent events, OpenAI Chat
// Completions as data-only chunks ending with "data: [DONE]"; Responses and
// Anthropic Messages as typed events ("event: <type>" then a JSON data
// line whose "type" repeats it); Gemini's streamGenerateContent?alt=sse as
// data-only chunks, each a whole GenerateContentResponse. Past the framing,
// everything below sees streamEvents only.
//
// A guard cannot judge a tool call before it is complete, and a client
// must never read a call that is then rejected or rewritten. So one
// logical call's client stream is written by a streamGate, one per
// protocol, that sits between the upstream streams of the attempts and the
// client:
//
//	upstream attempt 1 ──event──▶ gate ──text at once──────────────▶ client
//	                               │ holds tool-call parts, terminal events
//	                               │ assembles the attempt (response())
//	guard: Calls/validate on response()
//	   ├─ accept(cleaned resp) ─▶ gate writes the held calls from the cleaned
//	   │                          response, then the terminal events ─▶ client
//	   └─ reject() ─▶ held parts dropped; guard sends the re-ask upstream
//	upstream attempt 2 ──event──▶ gate: nothing reaches the client until
//	                               accept (its text is not streamed again)
//	   ...
//
// The gate's life is: event… → accept | reject → event… → … → accept (or
// fail). Per attempt:
//
//   - Text (OpenAI content deltas, Anthropic text and thinking blocks,
//     Responses message and reasoning items, Gemini text and thought parts)
//     of the first attempt reaches the client as it arrives, unchanged but
//     for the ids and counters that must run on across the client's one
//     stream (Responses' sequence_number).
//   - From the first tool-call part on (a chat delta with tool_calls, a
//     tool_use block, a function_call item, a functionCall part) the
//     attempt is held whole: a call is judged complete only at the end of
//     the attempt, and text that follows a call keeps its place after it.
//   - Terminal events (finish reason, usage, message_delta/message_stop,
//     response.completed, Gemini's finishReason chunk, [DONE]) are held;
//     but Gemini's passes as it came when the attempt called nothing.
//   - Every event is fed to the attempt's assembler, whose response() is
//     the sync response the stream amounts to, so the sync codec (calls,
//     accept, reask, usage) serves streams unchanged.
//
// A first attempt whose calls the stages accept unchanged is not
// assembled at all: the assembler lists the calls from the gate's parse
// of each event (assembler.calls), and the gate ends the attempt by
// handing on what it held as the upstream sent it (streamGate.release),
// so the client reads the upstream's events. Otherwise:
//
// accept(resp) takes the assembled response with cleaned arguments written
// back and writes, as one well-formed sequence the SDKs' accumulators take
// (openai.ChatCompletionAccumulator, anthropic's Message.Accumulate, the
// Responses events, genai's iterator): for the first attempt, everything
// resp holds past what already reached the client, with each tool call
// whole (its arguments in one fragment, cleaned); for a later attempt, only
// resp's tool calls; then the attempt's terminal events. All of it carries
// the first attempt's ids (completion id, message id, response id, Gemini
// responseId) and continues its counters (Anthropic block indexes,
// Responses output_index and sequence_number), since the client has
// already read those and an accumulator refuses a second id. reject()
// drops what the attempt held; the client reads nothing of it. An error
// event from upstream makes event() return an *upstreamStreamError; the
// adapter may retry (reject, then a new attempt) or end the client's
// stream with it (abort). fail()
// ends the client's stream with an error event in the protocol's stream
// shape, for a guard that fails closed after the stream has begun (the
// HTTP status is already 200 then).
//
// Bounds: a line, an event (a frame) and an assembled response are each
// bounded by MaxBody; past it the reader or assembler reports errTooLarge.

import "io"

// streamEvent is one event of a stream, as its framing reads it: its type
// where the framing names one (an SSE event field, "" when absent) and its
// payload (an SSE event's data lines joined with "\n", an NDJSON line).
// What else a frame carries is not kept (SSE comments, id and retry
// fields): none of the protocols uses it.
type streamEvent struct {
	Event string
	Data  []byte
	// parsed is Data as a gate parsed it (its protocol's parsed event),
	// nil when not parsed: a gate that hands an event on with the parts
	// its parsed form reads unchanged hands that form on with it, so that
	// the gates outside read each upstream event once per logical call.
	parsed any
}

// eventWriter is a writer that takes events whole: the writer of a gate
// whose output feeds another gate (the transport nests one gate per stage)
// or the client's stream, which would otherwise parse again the bytes
// writeEvent formats.
type eventWriter interface {
	putEvent(ev streamEvent) error
}

// writeEvent hands ev whole to an eventWriter, or writes it to a writer
// that takes bytes as a server-sent event (a protocol in another framing
// hands its gate a writer from framed).
func writeEvent(w io.Writer, ev streamEvent) error {
	if ew, ok := w.(eventWriter); ok {
		return ew.putEvent(ev)
	}
	_, err := w.Write(formatEvent(ev))
	if f, ok := w.(interface{ Flush() }); ok && err == nil {
		f.Flush()
	}
	return err
}

// writeEvents writes evs in order (writeEvent), up to the first that
// fails: a gate's release of what it held.
func writeEvents(w io.Writer, evs []streamEvent) error {
	for _, ev := range evs {
		if err := writeEvent(w, ev); err != nil {
			return err
		}
	}
	return nil
}

// assembler turns one upstream stream into the sync response it amounts
// to.
type assembler interface {
	// add takes the stream's next event; done reports that it ends the
	// stream ([DONE], message_stop, response.completed…; Gemini has no
	// such event, its stream just ends).
	add(ev streamEvent) (done bool, err error)
	// response is the sync response JSON the events so far amount to.
	response() ([]byte, error)
	// calls lists the calls of the events so far from the assembler's own
	// parse of them, without building the response and reading it back:
	// what the protocol's calls reads of response(), failing where
	// response() or that read would (the read's error as
	// unguardable("the streamed response is not of a shape the guard
	// reads", err)).
	calls() ([]wireCall, error)
}

// streamGate writes one logical call's client stream over its attempts
// (see the top of this file). Not safe for concurrent use: one goroutine
// drives it.
type streamGate interface {
	// event takes the current attempt's next upstream event, writes what
	// may reach the client now and holds the rest; done as for assembler.
	event(ev streamEvent) (done bool, err error)
	// response is the current attempt's assembled sync response.
	response() ([]byte, error)
	// current is the current attempt's assembler; reject gives the gate
	// a new one, so a response read from it stays the attempt's.
	current() assembler
	// release ends the first attempt, whose calls the stages accepted
	// unchanged, by handing on what the gate held as the upstream sent it,
	// then what accept would add that the upstream did not send. It
	// reports false, having written nothing, when it cannot (a later
	// attempt, whose ids and counters must be rewritten, or anything
	// accept would write otherwise): the gate then accepts the assembled
	// response.
	release() (bool, error)
	// accept ends the current attempt and the client's stream: resp is
	// response() with cleaned arguments written back.
	accept(resp []byte) error
	// reject drops what the current attempt held; the next event begins
	// the next attempt.
	reject()
	// fail ends the client's stream with an error event of type typ and
	// message msg, in the protocol's stream shape.
	fail(typ, msg string) error
	// abort ends the client's stream with the upstream's own error event
	// (the one an *upstreamStreamError from event carries), as it came.
	abort(ev streamEvent) error
}

// budget bounds what an assembler keeps.
type budget struct{ n int }

func (b *budget) take(n int) error {
	b.n += n
	if b.n > MaxBody {
		return errTooLarge
	}
	return nil
}

// upstreamStreamError is an error event an upstream stream sent; Data is
// its payload, for the client.
type upstreamStreamError struct{ Data []byte }

func (e *upstreamStreamError) Error() string {
	return "httpguard: upstream stream error: " + string(e.Data)
}
