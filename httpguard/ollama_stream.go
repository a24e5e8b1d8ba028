package httpguard

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// An Ollama stream is NDJSON (ndjsonFraming): each line a ChatResponse whose
// message holds a piece of the answer (content and thinking deltas, or
// whole tool calls: Ollama parses a call before it sends it, so a call
// never spans lines), the last line "done": true with done_reason and the
// counts, and an {"error": "…"} line when the server fails part-way. The
// sync answer a stream amounts to is what Ollama itself answers a request
// with "stream": false: the last line, with the contents and the thinking
// of every line joined and the tool calls of every line in order.

// ollamaChunk is one parsed stream line; calls index its bytes (the
// event's Data). A gate hands it on with the line (streamEvent.parsed) so
// that the gates outside never parse the line again.
type ollamaChunk struct {
	role              string
	content, thinking string
	calls             []span
	done              bool
	// hasMessage: the line has a message member (of any value), which
	// assemble sets in place rather than adds.
	hasMessage bool
}

// ollamaChunkOf returns ev's line parsed: the one a gate parsed, else
// parsed now.
func ollamaChunkOf(ev streamEvent) (*ollamaChunk, error) {
	if c, ok := ev.parsed.(*ollamaChunk); ok {
		return c, nil
	}
	return parseOllamaChunk(ev.Data)
}

// parseOllamaChunk parses a line; an {"error": …} line is an
// *upstreamStreamError carrying it.
func parseOllamaChunk(b []byte) (*ollamaChunk, error) {
	r, err := parseBody(b)
	if err != nil {
		return nil, err
	}
	if e, ok, err := field(b, r, "error"); err != nil {
		return nil, err
	} else if ok && kind(b, e) != 'n' {
		return nil, &upstreamStreamError{Data: append([]byte(nil), b...)}
	}
	c := &ollamaChunk{}
	if d, ok, err := field(b, r, "done"); err != nil {
		return nil, err
	} else if ok {
		switch kind(b, d) {
		case 't':
			c.done = true
		case 'f', 'n':
		default:
			return nil, fmt.Errorf("%w: done is not a boolean", errJSON)
		}
	}
	msg, ok, err := field(b, r, "message")
	c.hasMessage = ok
	if err != nil || !ok || kind(b, msg) == 'n' {
		return c, err
	}
	if kind(b, msg) != '{' {
		return nil, fmt.Errorf("%w: message is not an object", errJSON)
	}
	if c.role, err = optStr(b, msg, "role"); err != nil {
		return nil, err
	}
	if c.content, err = optStr(b, msg, "content"); err != nil {
		return nil, err
	}
	if c.thinking, err = optStr(b, msg, "thinking"); err != nil {
		return nil, err
	}
	if c.calls, err = ollamaToolCalls(b, msg); err != nil {
		return nil, err
	}
	return c, nil
}

// ollamaAssembler assembles an Ollama stream into the sync ChatResponse it
// amounts to.
type ollamaAssembler struct {
	budget
	last              []byte       // the last line: the response's top level
	chunk             *ollamaChunk // the last line parsed: the gate reads it, never parsing the line again
	role              string
	content, thinking strings.Builder
	toolCalls         []json.RawMessage
	done              bool
	// listed are the calls, as ollamaWire.calls reads them of the
	// response; fnErr is the first error reading a call's id or function,
	// callErr the first reading its name or arguments (fnErr comes first:
	// ollamaWire.calls reads every call's function before any name).
	listed         []wireCall
	fnErr, callErr error
}

// add takes one line. The bound (budget) counts what the assembler holds
// for the assembled response, not the stream's envelope: the last line
// (which replaces the one before), the text and the tool calls. So a long
// answer in many small lines streams whole, and held calls past MaxBody are
// still refused.
func (a *ollamaAssembler) add(ev streamEvent) (bool, error) {
	done, err := a.addLine(ev)
	return done, unreadable(ollamaUnread, err)
}

// addLine is add. The line's bytes are the event's own (an event's Data
// is never written to), kept as they are.
func (a *ollamaAssembler) addLine(ev streamEvent) (bool, error) {
	b := ev.Data
	c, err := ollamaChunkOf(ev)
	if err != nil {
		return false, err
	}
	if err := a.take(len(b) - len(a.last) + len(c.content) + len(c.thinking)); err != nil {
		return false, err
	}
	a.last, a.chunk = b, c
	if c.role != "" {
		a.role = c.role
	}
	a.content.WriteString(c.content)
	a.thinking.WriteString(c.thinking)
	for _, sp := range c.calls {
		// A copy, not the line's envelope; compact, as marshal writes
		// it in the response.
		call := compact(raw(b, sp))
		if err := a.take(len(call)); err != nil {
			return false, err
		}
		a.toolCalls = append(a.toolCalls, call)
		a.list(call)
	}
	a.done = a.done || c.done
	return c.done, nil
}

// list adds the tool call call (an object, compact) as ollamaCalls reads
// it.
func (a *ollamaAssembler) list(call []byte) {
	if a.fnErr != nil {
		return
	}
	tc := span{0, len(call)}
	id, err := optStr(call, tc, "id")
	if err != nil {
		a.fnErr = err
		return
	}
	fn, ok, err := field(call, tc, "function")
	if err == nil && (!ok || kind(call, fn) != '{') {
		err = fmt.Errorf("%w: tool call %d without function", errJSON, len(a.toolCalls)-1)
	}
	if err != nil {
		a.fnErr = err
		return
	}
	if a.callErr != nil {
		return
	}
	c, err := ollamaFunction(call, fn)
	if err != nil {
		a.callErr = err
		return
	}
	c.ID = id
	a.listed = append(a.listed, c)
}

// calls implements assembler.calls: the calls response() holds, as
// ollamaWire.calls reads them, listed as the lines came.
func (a *ollamaAssembler) calls() ([]wireCall, error) {
	if a.last == nil || !a.done || !a.chunk.hasMessage {
		// No response, or assemble adds the message to the last line,
		// which fails where that line has a key twice: its error.
		if _, err := a.response(); err != nil {
			return nil, err
		}
	}
	if err := a.fnErr; err != nil || a.callErr != nil {
		if err == nil {
			err = a.callErr
		}
		return nil, unguardable("the streamed response is not of a shape the guard reads", unreadable(ollamaUnread, err))
	}
	return a.listed, nil
}

// errNoDone is why a stream that ended before its done line cannot be
// guarded: a call may have been cut off with the rest.
const errNoDone = "ollama stream ended before its done line"

func (a *ollamaAssembler) response() ([]byte, error) {
	b, err := a.assemble()
	return b, unreadable(ollamaUnread, err)
}

// assemble is response: the last line with its message replaced by the
// whole answer.
func (a *ollamaAssembler) assemble() ([]byte, error) {
	if a.last == nil {
		return nil, fmt.Errorf("%w: empty ollama stream", errJSON)
	}
	if !a.done {
		return nil, unguardable(errNoDone, nil)
	}
	role := a.role
	if role == "" {
		role = "assistant"
	}
	msg, err := marshal(ollamaMessageJSON{role, a.content.String(), a.thinking.String(), a.toolCalls})
	if err != nil {
		return nil, err
	}
	return setAt(a.last, nil, "message", msg)
}

// ollamaMessageJSON is a message the guard writes: the role, the content
// (always, as Ollama writes it), the thinking and the tool calls when there
// are any.
type ollamaMessageJSON struct {
	Role      string            `json:"role"`
	Content   string            `json:"content"`
	Thinking  string            `json:"thinking,omitempty"`
	ToolCalls []json.RawMessage `json:"tool_calls,omitempty"`
}

// ollamaGate is the streamGate of Ollama. Per attempt: lines of text and
// thinking of the first attempt reach the client as they came; from the
// first line with tool calls on, the attempt is held; the done line is
// always held (its counts and done_reason end the client's stream once the
// attempt is delivered). accept writes what the client has not read as at
// most three lines: the rest of the text, the tool calls, the done line.
// Ollama's lines carry no id the client must see again (a call's id is
// the accepted attempt's), so nothing is rewritten.
type ollamaGate struct {
	w       io.Writer
	attempt int
	asm     *ollamaAssembler
	holding bool
	// passedContent and passedThinking are the bytes of content and
	// thinking of the first attempt the client has read.
	passedContent, passedThinking int
	ended                         bool
	// held are the first attempt's lines that did not reach the client,
	// as they came, for release.
	held []streamEvent
}

func newOllamaGate(w io.Writer) *ollamaGate { return &ollamaGate{w: w, asm: &ollamaAssembler{}} }

func (g *ollamaGate) write(b []byte) error { return writeEvent(g.w, streamEvent{Data: b}) }

func (g *ollamaGate) event(ev streamEvent) (bool, error) {
	if g.ended {
		return true, nil
	}
	done, err := g.asm.add(ev)
	if err != nil {
		return false, err
	}
	c := g.asm.chunk // add parsed it
	g.holding = g.holding || len(c.calls) > 0
	if g.attempt > 0 {
		return done, nil
	}
	if done || g.holding {
		return done, g.hold(ev, c)
	}
	g.passedContent += len(c.content)
	g.passedThinking += len(c.thinking)
	return false, writeEvent(g.w, streamEvent{Data: ev.Data, parsed: c})
}

// hold keeps the first attempt's line ev, parsed as c, for release. It
// counts against the attempt's bound.
func (g *ollamaGate) hold(ev streamEvent, c *ollamaChunk) error {
	if err := g.asm.take(len(ev.Data)); err != nil {
		return err
	}
	g.held = append(g.held, streamEvent{Data: ev.Data, parsed: c})
	return nil
}

// release implements streamGate.release: the first attempt's held lines (from its
// first call on, and its done line), as they came, when its calls were
// accepted unchanged. Ollama's lines carry nothing accept would rewrite
// for the first attempt, so it always can.
func (g *ollamaGate) release() (bool, error) {
	if g.ended || g.attempt > 0 {
		return false, nil
	}
	g.ended = true
	held := g.held
	g.held = nil
	return true, writeEvents(g.w, held)
}

func (g *ollamaGate) response() ([]byte, error) { return g.asm.response() }

func (g *ollamaGate) current() assembler { return g.asm }

func (g *ollamaGate) accept(resp []byte) error {
	if g.ended {
		return nil
	}
	g.ended = true
	lines, err := g.acceptedLines(resp)
	if err != nil {
		return err
	}
	for _, l := range lines {
		if err := g.write(l); err != nil {
			return err
		}
	}
	return nil
}

// acceptedLines returns the lines that end the client's stream with resp:
// the text the client has not read, resp's tool calls, the done line.
func (g *ollamaGate) acceptedLines(resp []byte) ([][]byte, error) {
	c, err := parseOllamaChunk(resp)
	if err != nil {
		return nil, err
	}
	line, err := ollamaLine(resp)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	add := func(m ollamaMessageJSON) {
		if err == nil {
			var b []byte
			if b, err = line(m); err == nil {
				out = append(out, b)
			}
		}
	}
	if content, thinking := g.unread(c); content != "" || thinking != "" {
		add(ollamaMessageJSON{Role: "assistant", Content: content, Thinking: thinking})
	}
	if len(c.calls) > 0 {
		calls := make([]json.RawMessage, len(c.calls))
		for i, sp := range c.calls {
			calls[i] = compact(raw(resp, sp))
		}
		add(ollamaMessageJSON{Role: "assistant", ToolCalls: calls})
	}
	if err != nil {
		return nil, err
	}
	// The done line: resp's top level (done_reason, counts) with an empty
	// message, its parts written above.
	end, err := setAt(resp, nil, "message", []byte(`{"role":"assistant","content":""}`))
	if err == nil {
		end, err = setAt(end, nil, "done", []byte("true"))
	}
	if err != nil {
		return nil, err
	}
	return append(out, compact(end)), nil
}

// unread returns the text of the accepted attempt c the client reads: for
// the first attempt what the client has not read yet; for a later one
// without tool calls (the model answered in text after a re-ask, or a
// stand-in answer) its whole content, since that is the answer; for a
// later one with calls none (its preamble would repeat the first
// attempt's).
func (g *ollamaGate) unread(c *ollamaChunk) (content, thinking string) {
	switch {
	case g.attempt == 0:
		if len(c.content) > g.passedContent {
			content = c.content[g.passedContent:]
		}
		if len(c.thinking) > g.passedThinking {
			thinking = c.thinking[g.passedThinking:]
		}
	case len(c.calls) == 0:
		content = c.content
	}
	return content, thinking
}

// ollamaLine returns a maker of stream lines (done false) with resp's
// model and created_at.
func ollamaLine(resp []byte) (func(ollamaMessageJSON) ([]byte, error), error) {
	r, err := parseBody(resp)
	if err != nil {
		return nil, err
	}
	model, err := optStr(resp, r, "model")
	if err != nil {
		return nil, err
	}
	var created json.RawMessage
	if v, ok, err := field(resp, r, "created_at"); err != nil {
		return nil, err
	} else if ok {
		created = raw(resp, v)
	}
	return func(m ollamaMessageJSON) ([]byte, error) {
		return marshal(struct {
			Model     string            `json:"model"`
			CreatedAt json.RawMessage   `json:"created_at,omitempty"`
			Message   ollamaMessageJSON `json:"message"`
			Done      bool              `json:"done"`
		}{model, created, m, false})
	}, nil
}

func (g *ollamaGate) reject() {
	g.attempt++
	g.asm = &ollamaAssembler{}
	g.holding = false
	g.held = nil
}

func (g *ollamaGate) fail(typ, msg string) error {
	if g.ended {
		return nil
	}
	g.ended = true
	return g.write(ollamaWire{}.errorBody(0, typ, msg))
}

func (g *ollamaGate) abort(ev streamEvent) error {
	if g.ended {
		return nil
	}
	g.ended = true
	return g.write(ev.Data)
}
