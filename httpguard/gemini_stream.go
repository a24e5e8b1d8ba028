package httpguard

import (
	"fmt"
	"io"
)

// geminiChunk is one parsed stream chunk: its first candidate's (index 0)
// and parts, and whether it holds other candidates.
type geminiChunk struct {
	cand   span // zero when the chunk has no candidate
	hasC   bool
	role   string
	parts  []span
	finish bool
	// malformed: the finishReason is MALFORMED_FUNCTION_CALL, a call the
	// API could not read.
	malformed bool
	// other: the chunk holds candidates past the first (several in the
	// chunk, or one whose index is not 0); otherCalls: one of them holds
	// a function call.
	other, otherCalls bool
}

func parseGeminiChunk(b []byte) (*geminiChunk, error) {
	r, err := parseBody(b)
	if err != nil {
		return nil, err
	}
	if e, ok, err := field(b, r, "error"); err != nil {
		return nil, err
	} else if ok && kind(b, e) != 'n' {
		return nil, &upstreamStreamError{Data: append([]byte(nil), b...)}
	}
	c := &geminiChunk{}
	cs, ok, err := field(b, r, "candidates")
	if err != nil || !ok || kind(b, cs) == 'n' {
		return c, err
	}
	es, err := arrayElems(b, cs)
	if err != nil || len(es) == 0 {
		return c, err
	}
	if err := c.candidates(b, es); err != nil {
		return nil, err
	}
	if !c.hasC {
		return c, nil
	}
	if err := c.candidate(b); err != nil {
		return nil, err
	}
	return c, nil
}

// candidates finds, among the chunk's candidates es, the first one's (index
// 0) and notes whether others hold calls.
func (c *geminiChunk) candidates(b []byte, es []span) error {
	for _, e := range es {
		idx := 0
		if kind(b, e) == '{' {
			if i, ok, err := field(b, e, "index"); err != nil {
				return err
			} else if ok && kind(b, i) != 'n' && string(raw(b, i)) != "0" {
				idx = -1 // another candidate's
			}
		}
		if idx == 0 && !c.hasC {
			c.cand, c.hasC = e, true
			continue
		}
		c.other = true
		calls, err := candidateCalls(b, e)
		if err != nil {
			return err
		}
		c.otherCalls = c.otherCalls || calls
	}
	return nil
}

// candidate reads the first candidate's finish reason, role and parts.
func (c *geminiChunk) candidate(b []byte) error {
	if f, ok, err := field(b, c.cand, "finishReason"); err != nil {
		return err
	} else if ok && kind(b, f) != 'n' {
		c.finish = true
		c.malformed = string(raw(b, f)) == `"`+geminiMalformed+`"`
	}
	content, ok, err := field(b, c.cand, "content")
	if err != nil || !ok || kind(b, content) != '{' {
		return err
	}
	if c.role, err = optStr(b, content, "role"); err != nil {
		return err
	}
	ps, ok, err := field(b, content, "parts")
	if err != nil || !ok || kind(b, ps) == 'n' {
		return err
	}
	if c.parts, err = arrayElems(b, ps); err != nil {
		return err
	}
	for _, p := range c.parts {
		if err := checkFields(b, p, "functionCall", "text", "thought"); err != nil {
			return err
		}
	}
	return nil
}

// isAnswerPart reports whether the part at sp is answer text: a text part
// that is not a thought.
func isAnswerPart(b []byte, sp span) bool {
	if _, ok, err := field(b, sp, "text"); err != nil || !ok {
		return false
	}
	th, ok, err := field(b, sp, "thought")
	return err == nil && (!ok || string(raw(b, th)) != "true")
}

// isCallPart reports whether the part at sp is a functionCall.
func isCallPart(b []byte, sp span) bool {
	_, ok, err := field(b, sp, "functionCall")
	return err == nil && ok
}

// geminiAssembler assembles a Gemini stream into a GenerateContentResponse:
// the last chunk's top level (usageMetadata, modelVersion, responseId),
// the last candidate's fields (finishReason, safetyRatings, …), and every
// chunk's parts in order, as they came: text fragments are not merged, so
// each thoughtSignature stays on the part it came on, as Gemini asks a
// replay to keep it.
type geminiAssembler struct {
	budget
	last   []byte
	chunk  *geminiChunk // last parsed: the gate reads it, never parsing the chunk again
	cand   []byte
	finish []byte
	role   string
	parts  [][]byte
	// several: the stream held candidates past the first; calls: it held
	// function calls. Both at once cannot be guarded (geminiParts): only
	// the first candidate is assembled, so that several candidates without
	// calls stream through.
	several, calls bool
}

// add takes one chunk. The bound (budget) counts what the assembler holds
// for the assembled response, not the stream's envelope: the last chunk
// (whose top level and candidate the response keeps; it replaces the one
// before) and every part, copied out of its chunk. So a long answer in
// many small chunks streams whole, and held calls past MaxBody are still
// refused.
func (a *geminiAssembler) add(ev streamEvent) (bool, error) {
	done, err := a.addChunk(ev)
	return done, unreadable(geminiUnread, err)
}

// addChunk is add.
func (a *geminiAssembler) addChunk(ev streamEvent) (bool, error) {
	b := append([]byte(nil), ev.Data...)
	c, err := parseGeminiChunk(b)
	if err != nil {
		return false, err
	}
	if err := a.take(len(b) - len(a.last)); err != nil {
		return false, err
	}
	a.last, a.chunk = b, c
	a.several = a.several || c.other
	a.calls = a.calls || c.otherCalls
	for _, p := range c.parts {
		a.calls = a.calls || isCallPart(b, p)
	}
	if a.several && a.calls {
		return false, unguardable(severalCandidates, nil)
	}
	if !c.hasC {
		return false, nil
	}
	a.cand = raw(b, c.cand)
	if c.role != "" {
		a.role = c.role
	}
	if c.finish {
		f, _, _ := field(b, c.cand, "finishReason")
		a.finish = raw(b, f)
	}
	for _, p := range c.parts {
		part := append([]byte(nil), raw(b, p)...) // not the chunk's envelope
		if err := a.take(len(part)); err != nil {
			return false, err
		}
		a.parts = append(a.parts, part)
	}
	return false, nil
}

func (a *geminiAssembler) response() ([]byte, error) {
	b, err := a.assemble()
	return b, unreadable(geminiUnread, err)
}

// assemble is response.
func (a *geminiAssembler) assemble() ([]byte, error) {
	if a.last == nil {
		return nil, fmt.Errorf("%w: empty gemini stream", errJSON)
	}
	cand := a.cand
	if cand == nil {
		cand = []byte(`{}`)
	}
	role := a.role
	if role == "" {
		role = "model"
	}
	content := []byte(`{"parts":[` + string(joinRaw(a.parts)) + `],"role":` + string(marshalString(role)) + `}`)
	cand, err := setAt(cand, nil, "content", content)
	if err == nil && a.finish != nil {
		cand, err = setAt(cand, nil, "finishReason", a.finish)
	}
	if err != nil {
		return nil, err
	}
	return setAt(a.last, nil, "candidates", append(append([]byte("["), cand...), ']'))
}

// withParts returns the Gemini response or chunk b with candidates[0]'s
// parts replaced (its content dropped when parts is empty), and its
// finishReason dropped when dropFinish.
func withParts(b []byte, parts [][]byte, dropFinish bool) ([]byte, error) {
	r, err := parseBody(b)
	if err != nil {
		return nil, err
	}
	cand, ok, err := at(b, r, "candidates", 0)
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: no candidate", errJSON)
	}
	c, err := dropMembers(b, cand, func(m member) bool {
		return (dropFinish && m.key == "finishReason") || (len(parts) == 0 && m.key == "content")
	})
	if err != nil {
		return nil, err
	}
	if len(parts) > 0 {
		if _, ok, err := field(b, cand, "content"); err != nil {
			return nil, err
		} else if !ok {
			c, err = setAt(c, nil, "content", []byte(`{"role":"model"}`))
			if err != nil {
				return nil, err
			}
		}
		if c, err = setAt(c, []any{"content"}, "parts", append(append([]byte("["), joinRaw(parts)...), ']')); err != nil {
			return nil, err
		}
	}
	return apply(b, edit{at: cand, text: c}), nil
}

// geminiGate is the streamGate of Gemini. genai reads each data line as
// one JSON chunk, so the gate writes every chunk on one line; a chunk it
// passes keeps its bytes otherwise.
type geminiGate struct {
	w       io.Writer
	attempt int
	asm     *geminiAssembler
	id      string // the first attempt's responseId
	holding bool
	passed  int // parts of the first attempt that reached the client
	// finished: the first attempt's last chunk (its finishReason) reached
	// the client, as it came: the attempt called nothing.
	finished bool
	ended    bool
}

func newGeminiGate(w io.Writer) *geminiGate { return &geminiGate{w: w, asm: &geminiAssembler{}} }

func (g *geminiGate) write(b []byte) error { return writeEvent(g.w, streamEvent{Data: compact(b)}) }

func (g *geminiGate) event(ev streamEvent) (bool, error) {
	if g.ended {
		return true, nil
	}
	if _, err := g.asm.add(ev); err != nil {
		return false, err
	}
	b := g.asm.last
	if g.attempt == 0 && g.id == "" {
		r, _ := root(b)
		g.id, _ = optStr(b, r, "responseId")
	}
	if g.attempt > 0 || g.holding {
		return false, nil
	}
	c := g.asm.chunk // add parsed it
	n := len(c.parts)
	for i, p := range c.parts {
		if isCallPart(b, p) {
			n, g.holding = i, true
			break
		}
	}
	if c.malformed {
		// A call the API could not read, which ToolArgValidation asks
		// again: the chunk's end (finishReason, finishMessage) is held
		// as a call is, until the attempt is delivered; its text passes.
		g.holding = true
	}
	if !g.holding {
		// No call so far: the chunk passes as it came, the last one
		// (finishReason) too. An attempt without calls is the answer: no
		// stage asks again, and a stage that returns it does not deliver
		// it through its gate, so a finishReason held here would be lost
		// (and the client's last chunk left without content).
		g.passed += n
		g.finished = g.finished || c.finish
		return false, g.write(b)
	}
	if n == 0 {
		return false, nil
	}
	parts := make([][]byte, n)
	for i := range parts {
		parts[i] = raw(b, c.parts[i])
	}
	out, err := withParts(b, parts, true)
	if err != nil {
		return false, err
	}
	g.passed += n
	return false, g.write(out)
}

func (g *geminiGate) response() ([]byte, error) { return g.asm.response() }

func (g *geminiGate) current() assembler { return g.asm }

func (g *geminiGate) accept(resp []byte) error {
	if g.ended {
		return nil
	}
	g.ended = true
	if g.attempt == 0 && g.finished {
		return nil // the answer reached the client whole
	}
	_, parts, _, err := geminiParts(resp)
	if err != nil {
		return err
	}
	// The parts: for the first attempt those the client has not read; for
	// a later one its calls or, when it has none (the model answered in
	// text after a re-ask, or a stand-in answer), its text parts that are
	// not thoughts, since that text is the answer.
	calls := false
	for _, p := range parts {
		calls = calls || isCallPart(resp, p)
	}
	var emit [][]byte
	for i, p := range parts {
		switch {
		case g.attempt == 0:
			if i >= g.passed {
				emit = append(emit, raw(resp, p))
			}
		case calls:
			if isCallPart(resp, p) {
				emit = append(emit, raw(resp, p))
			}
		default:
			if isAnswerPart(resp, p) {
				emit = append(emit, raw(resp, p))
			}
		}
	}
	out, err := withParts(resp, emit, false)
	if err != nil {
		return err
	}
	if g.id != "" {
		if out, err = setAt(out, nil, "responseId", marshalString(g.id)); err != nil {
			return err
		}
	}
	return g.write(out)
}

func (g *geminiGate) reject() {
	g.attempt++
	g.asm = &geminiAssembler{}
	g.holding = false
}

func (g *geminiGate) fail(typ, msg string) error {
	if g.ended {
		return nil
	}
	g.ended = true
	return g.write(geminiWire{}.errorBody(422, typ, msg))
}

func (g *geminiGate) abort(ev streamEvent) error {
	if g.ended {
		return nil
	}
	g.ended = true
	return g.write(ev.Data)
}

// opening is false: every chunk of a Gemini stream is a whole
// GenerateContentResponse, none only opens it.
func (geminiWire) opening(streamEvent) bool { return false }

// framing: server-sent events.
func (geminiWire) framing() framing { return sseFraming{} }
