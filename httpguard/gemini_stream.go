package httpguard

import (
	"fmt"
	"io"
)

// geminiChunk is one parsed stream chunk: its first candidate's (index 0)
// and parts, and whether it holds other candidates. Its spans index the
// chunk's bytes (the event's Data); a gate hands it on with the event
// (streamEvent.parsed) so that the gates outside never parse the chunk
// again.
type geminiChunk struct {
	cand   span // zero when the chunk has no candidate
	role   span // content.role when a string; zero otherwise
	finish span // finishReason when not null; zero otherwise
	// id is the top level's responseId when it is a string; zero
	// otherwise.
	id    span
	parts []span
	// fcs are, beside parts, the spans of their functionCall members
	// that are objects (the calls geminiCalls reads), zero for the other
	// parts; nil when the chunk has no call.
	fcs []span
	// firstCall is the index in parts of the first part with a
	// functionCall member (isCallPart), -1 when none.
	firstCall int
	// malformed: the finishReason is MALFORMED_FUNCTION_CALL, a call the
	// API could not read.
	malformed bool
	// compact: the chunk has no space outside its strings, so that it
	// passes on one line as it came.
	compact bool
	// other: the chunk holds candidates past the first (several in the
	// chunk, or one whose index is not 0); otherCalls: one of them holds
	// a function call.
	other, otherCalls bool
	// hasCands, hasContent, hasFinish: the top level has candidates, the
	// first candidate content, finishReason (of any value): the members
	// assemble sets in place rather than adds (see calls).
	hasCands, hasContent, hasFinishMember bool
}

// hasCand reports whether the chunk has a first candidate.
func (c *geminiChunk) hasCand() bool { return c.cand != span{} }

// hasFinish reports whether the chunk's candidate has a finishReason.
func (c *geminiChunk) hasFinish() bool { return c.finish != span{} }

// chunkOf returns ev's chunk: the one a gate parsed, else parsed now.
func (p *geminiParser) chunkOf(ev streamEvent) (*geminiChunk, error) {
	if c, ok := ev.parsed.(*geminiChunk); ok {
		return c, nil
	}
	return p.parse(ev.Data)
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
// replay to keep it. It lists the calls as it reads the parts (calls), so
// that the response is built only when a stage reads it.
type geminiAssembler struct {
	budget
	parser geminiParser
	last   []byte
	chunk  *geminiChunk // last parsed: the gate reads it, never parsing the chunk again
	cand   []byte
	// candSet: cand has the members assemble sets (content, and
	// finishReason when finish is set), so assembling it cannot fail.
	candSet, candFinish bool
	finish              []byte
	role                string
	// roleRaw is the JSON string role was decoded from, so that a role
	// repeated in every chunk is decoded once; in roleBuf when it fits.
	roleRaw []byte
	roleBuf [16]byte
	// parts are copies of the parts out of their chunks, in partBytes;
	// in partsBuf while they are few.
	parts     [][]byte
	partsBuf  [8][]byte
	partBytes geminiBytes
	// several: the stream held candidates past the first; called: it held
	// function calls. Both at once cannot be guarded (geminiParts): only
	// the first candidate is assembled, so that several candidates without
	// calls stream through.
	several, called bool
	// listed are the calls of parts, as geminiWire.calls reads them of
	// the response; partErr is the first error reading a part's
	// functionCall, callErr the first reading a call (partErr comes
	// first: geminiWire.calls reads every part before any call).
	listed           []wireCall
	listedBuf        [2]wireCall
	partErr, callErr error
}

// geminiBytes copies byte slices into blocks it never writes again, one
// allocation for many small copies: a block past the first is as large as
// those before it, within bounds, and a slice larger than a quarter of a
// block gets an allocation of its own. A block lives while a copy in it
// is kept; past its copies it holds less than a quarter of a block, the
// current block its remains.
type geminiBytes struct {
	block []byte
	made  int
}

// The bounds of a geminiBytes block.
const (
	geminiLeastBytes = 512
	geminiMostBytes  = 32 << 10
)

// copy returns a copy of b.
func (g *geminiBytes) copy(b []byte) []byte {
	if len(b) > cap(g.block)-len(g.block) {
		n := min(max(g.made, geminiLeastBytes), geminiMostBytes)
		if len(b) > n/4 {
			return append([]byte(nil), b...)
		}
		g.block, g.made = make([]byte, 0, n), g.made+n
	}
	l := len(g.block)
	g.block = append(g.block, b...)
	return g.block[l:len(g.block):len(g.block)]
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

// addChunk is add. The chunk's bytes are the event's own (an event's Data
// is never written to), kept as they are.
func (a *geminiAssembler) addChunk(ev streamEvent) (bool, error) {
	b := ev.Data
	c, err := a.parser.chunkOf(ev)
	if err != nil {
		return false, err
	}
	if err := a.take(len(b) - len(a.last)); err != nil {
		return false, err
	}
	a.last, a.chunk = b, c
	a.several = a.several || c.other
	a.called = a.called || c.otherCalls || c.firstCall >= 0
	if a.several && a.called {
		return false, unguardable(severalCandidates, nil)
	}
	if !c.hasCand() {
		return false, nil
	}
	a.cand = raw(b, c.cand)
	a.candSet, a.candFinish = c.hasContent, c.hasFinishMember
	if rs := raw(b, c.role); len(rs) > 0 && string(rs) != string(a.roleRaw) {
		role := "model" // as str reads it, without a string made
		if string(rs) != `"model"` {
			if role, err = str(b, c.role); err != nil {
				return false, err
			}
		}
		if role != "" {
			if a.roleRaw == nil {
				a.roleRaw = a.roleBuf[:0]
			}
			a.role, a.roleRaw = role, append(a.roleRaw[:0], rs...)
		}
	}
	if c.hasFinish() {
		a.finish = raw(b, c.finish)
	}
	for i, p := range c.parts {
		part := a.partBytes.copy(raw(b, p)) // not the chunk's envelope
		if err := a.take(len(part)); err != nil {
			return false, err
		}
		if a.parts == nil {
			a.parts = a.partsBuf[:0]
		}
		a.parts = append(a.parts, part)
		switch {
		case kind(b, p) != '{':
			if _, _, err := field(part, span{0, len(part)}, "functionCall"); err != nil && a.partErr == nil {
				a.partErr = err
			}
		case c.fcs != nil && c.fcs[i] != span{}:
			fc := c.fcs[i]
			a.list(part, span{fc.start - p.start, fc.end - p.start})
		}
	}
	return false, nil
}

// list adds the call whose functionCall is at fc of part, as
// geminiCallsOf reads it.
func (a *geminiAssembler) list(part []byte, fc span) {
	if a.callErr != nil {
		return
	}
	call, err := geminiCall(part, fc)
	if err != nil {
		a.callErr = err
		return
	}
	if a.listed == nil {
		a.listed = a.listedBuf[:0]
	}
	a.listed = append(a.listed, call)
}

// calls implements assembler.calls: the calls response() holds, as
// geminiWire.calls reads them, listed as the parts came.
func (a *geminiAssembler) calls() ([]wireCall, error) {
	if a.last == nil || !a.chunk.hasCands || (a.cand != nil && (!a.candSet || (a.finish != nil && !a.candFinish))) {
		// assemble adds a member to an object (the chunk's candidates,
		// the candidate's content or finishReason), which fails where
		// the object has a key twice: read its error.
		if _, err := a.response(); err != nil {
			return nil, err
		}
	}
	if err := a.partErr; err != nil || a.callErr != nil {
		if err == nil {
			err = a.callErr
		}
		return nil, unguardable("the streamed response is not of a shape the guard reads", unreadable(geminiUnread, err))
	}
	return a.listed, nil
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
	return withPartsAt(b, cand, parts, dropFinish)
}

// withPartsAt is withParts of the candidate at cand, b already parsed.
func withPartsAt(b []byte, cand span, parts [][]byte, dropFinish bool) ([]byte, error) {
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
// passes keeps its bytes otherwise, and its parse (streamEvent.parsed)
// when those bytes are the upstream's.
type geminiGate struct {
	w       io.Writer
	attempt int
	asm     *geminiAssembler
	// idRaw is the first attempt's responseId as the JSON string it came
	// as (responseID), from the first chunk that gave one not empty.
	idRaw   []byte
	holding bool
	passed  int // parts of the first attempt that reached the client
	// finished: the first attempt's last chunk (its finishReason) reached
	// the client, as it came: the attempt called nothing.
	finished bool
	ended    bool
	// held are the first attempt's chunks from the one its first call
	// came in, as they came, for release; split: that chunk's parts
	// before the call reached the client (its rest cannot be handed on
	// as it came), or a held chunk's responseId is not the attempt's
	// (accept writes it anew): release cannot.
	held  []streamEvent
	split bool
	// heldN is the bytes of held, bounded on its own by MaxBody (see
	// hold).
	heldN int
}

// responseID is the first attempt's responseId, decoded when the gate
// writes it (accept): "" when no chunk gave one. A JSON string decodes
// to "" only when it is "", so idRaw past two bytes is an id.
func (g *geminiGate) responseID() string {
	id, _ := str(g.idRaw, span{0, len(g.idRaw)})
	return id
}

func newGeminiGate(w io.Writer) *geminiGate { return &geminiGate{w: w, asm: &geminiAssembler{}} }

// write writes the chunk b, on one line.
func (g *geminiGate) write(b []byte) error { return writeEvent(g.w, streamEvent{Data: compact(b)}) }

// pass writes the upstream's chunk ev, parsed as c: as it came, with its
// parse, when it is one line already without space to drop; else as
// write does.
func (g *geminiGate) pass(ev streamEvent, c *geminiChunk) error {
	if !c.compact {
		return g.write(ev.Data)
	}
	return writeEvent(g.w, streamEvent{Data: ev.Data, parsed: c})
}

func (g *geminiGate) event(ev streamEvent) (bool, error) {
	if g.ended {
		return true, nil
	}
	if _, err := g.asm.add(ev); err != nil {
		return false, err
	}
	b := ev.Data
	c := g.asm.chunk // add parsed it
	if g.attempt == 0 && len(g.idRaw) <= len(`""`) && c.id != (span{}) {
		g.idRaw = raw(b, c.id)
	}
	if g.attempt > 0 {
		return false, nil
	}
	if g.holding {
		return false, g.hold(ev, c)
	}
	n := len(c.parts)
	if c.firstCall >= 0 {
		n, g.holding = c.firstCall, true
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
		g.finished = g.finished || c.hasFinish()
		return false, g.pass(ev, c)
	}
	if n == 0 {
		return false, g.hold(ev, c)
	}
	g.split, g.held = true, nil
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

// hold keeps the first attempt's chunk ev, parsed as c, for release.
// What it keeps is bounded on its own, by MaxBody: counted against the
// assembler's budget, a call's parts would count twice (the chunk held,
// and the parts the assembler copies from it), and a call of more than
// half of MaxBody that passed before would be refused. Past the bound the
// held chunks are dropped and release refused (split): the attempt is
// accepted as before, written anew from its assembly.
func (g *geminiGate) hold(ev streamEvent, c *geminiChunk) error {
	if g.split {
		return nil
	}
	if string(raw(ev.Data, c.id)) != string(g.idRaw) {
		g.split, g.held = true, nil
		return nil
	}
	if g.heldN += len(ev.Data); g.heldN > MaxBody {
		g.split, g.held = true, nil
		return nil
	}
	g.held = append(g.held, streamEvent{Data: ev.Data, parsed: c})
	return nil
}

// release implements streamGate.release: the first attempt's held chunks, as they
// came, when its calls were accepted unchanged. An attempt that called
// nothing and whose last chunk reached the client has nothing to add;
// one whose last chunk did not, or whose first call came after text in
// the same chunk, is accepted as before.
func (g *geminiGate) release() (bool, error) {
	if g.ended || g.attempt > 0 {
		return false, nil
	}
	switch {
	case !g.holding && g.finished:
		g.ended = true
		return true, nil
	case !g.holding || g.split:
		return false, nil
	}
	g.ended = true
	held := g.held
	g.held = nil
	for _, ev := range held {
		if err := g.pass(ev, ev.parsed.(*geminiChunk)); err != nil {
			return true, err
		}
	}
	return true, nil
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
	if id := g.responseID(); id != "" {
		if out, err = setAt(out, nil, "responseId", marshalString(id)); err != nil {
			return err
		}
	}
	return g.write(out)
}

func (g *geminiGate) reject() {
	g.attempt++
	g.asm = &geminiAssembler{}
	g.holding = false
	g.held = nil
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
