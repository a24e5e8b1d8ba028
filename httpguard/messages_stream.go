package httpguard

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// messagesEvent is what the wire code reads of an Anthropic stream event
// (decodeMessagesEvent reads it as encoding/json would by the tags).
type messagesEvent struct {
	Type         string          `json:"type"`
	Index        int             `json:"index"`
	Message      json.RawMessage `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        json.RawMessage `json:"delta"`
	Usage        json.RawMessage `json:"usage"`
	// blockType is content_block_start's block type.
	blockType string
	// delta is content_block_delta's delta, decoded.
	delta messagesDelta
}

type messagesDelta struct {
	Type        string          `json:"type"`
	Text        string          `json:"text"`
	Thinking    string          `json:"thinking"`
	Signature   string          `json:"signature"`
	PartialJSON string          `json:"partial_json"`
	Citation    json.RawMessage `json:"citation"`
}

// parseMessagesEvent returns ev parsed: the one a gate parsed, else
// parsed now.
func parseMessagesEvent(ev streamEvent) (*messagesEvent, error) {
	if e, ok := ev.parsed.(*messagesEvent); ok {
		return e, nil
	}
	var e messagesEvent
	if err := decodeMessagesEvent(ev.Data, &e); err != nil {
		return nil, fmt.Errorf("%w: anthropic event: %w", errJSON, err)
	}
	if e.Type == "error" || ev.Event == "error" {
		return nil, &upstreamStreamError{Data: append([]byte(nil), ev.Data...)}
	}
	switch e.Type {
	case "content_block_start":
		var err error
		if e.blockType, err = typeOf(e.ContentBlock, span{0, len(e.ContentBlock)}); err != nil {
			return nil, fmt.Errorf("%w: anthropic content block: %w", errJSON, err)
		}
	case "content_block_delta":
		if err := decodeMessagesDelta(e.Delta, &e.delta); err != nil {
			return nil, fmt.Errorf("%w: %w", errJSON, err)
		}
	}
	return &e, nil
}

// Why an Anthropic stream cannot be guarded (unguardableError's why).
const (
	startWithContent = "anthropic message_start with content"
	unknownDelta     = "anthropic content block delta of an unknown type"
	inputTwice       = "anthropic tool input both in its block's start and in deltas"
)

// startsEmpty returns an unguardable error unless message_start's message
// has no content: the SDKs' accumulators take the message whole, content
// included, so a block there (a tool_use the guard would have to hold
// before the message could start) reaches the client outside the blocks
// the gate holds and checks.
func startsEmpty(message []byte) error {
	r, err := parseBody(message)
	if err != nil {
		return err
	}
	c, ok, err := field(message, r, "content")
	if err != nil || !ok || kind(message, c) == 'n' {
		return err
	}
	if kind(message, c) != '[' {
		return unguardable(startWithContent, nil)
	}
	es, err := arrayElems(message, c)
	if err != nil {
		return err
	}
	if len(es) > 0 {
		return unguardable(startWithContent, fmt.Errorf("%d blocks", len(es)))
	}
	return nil
}

type blockAcc struct {
	start []byte
	typ   string
	// startInput: the start has an input other than {} (read in place,
	// allocating nothing).
	startInput                         bool
	text, thinking, signature, partial strings.Builder
	hasPartial                         bool
	citations                          [][]byte
}

// messagesAssembler assembles an Anthropic stream into a message.
type messagesAssembler struct {
	budget
	message []byte
	blocks  []*blockAcc
	delta   []byte         // the last message_delta's delta
	usage   []byte         // the last message_delta's usage
	last    *messagesEvent // the event add took last
}

// add takes one event. The bound (budget) counts what the assembler and
// its gate hold for the assembled response, not the stream's envelope: an
// event kept whole (message_start, a block's start, a citation, the
// message_delta and message_stop a gate holds) by its length, a delta by
// the text it adds; a ping or a block's stop, which nothing keeps, counts
// nothing. So a long answer in many small deltas streams whole, and held
// tool-call input past MaxBody is still refused.
func (a *messagesAssembler) add(ev streamEvent) (bool, error) {
	done, err := a.addEvent(ev)
	return done, unreadable(anthropicUnread, err)
}

// addEvent is add.
func (a *messagesAssembler) addEvent(ev streamEvent) (bool, error) {
	e, err := parseMessagesEvent(ev)
	if err != nil {
		return false, err
	}
	if err := a.take(a.held(e, len(ev.Data))); err != nil {
		return false, err
	}
	a.last = e
	switch e.Type {
	case "message_start":
		if err := startsEmpty(e.Message); err != nil {
			return false, err
		}
		a.message = e.Message
	case "content_block_start":
		return false, a.startBlock(e)
	case "content_block_delta":
		if e.Index < 0 || e.Index >= len(a.blocks) {
			return false, fmt.Errorf("%w: delta for block %d of %d", errJSON, e.Index, len(a.blocks))
		}
		return false, a.blocks[e.Index].add(e.delta)
	case "message_delta":
		a.delta, a.usage = e.Delta, e.Usage
	case "message_stop":
		return true, nil
	}
	return false, nil
}

// startBlock opens the block a content_block_start event e starts.
func (a *messagesAssembler) startBlock(e *messagesEvent) error {
	if e.Index != len(a.blocks) {
		return fmt.Errorf("%w: block %d starts after %d blocks", errJSON, e.Index, len(a.blocks))
	}
	if err := checkBlockType(e.blockType); err != nil {
		return err
	}
	bl := &blockAcc{start: e.ContentBlock, typ: e.blockType}
	if in, ok, err := field(e.ContentBlock, span{0, len(e.ContentBlock)}, "input"); err != nil {
		return err
	} else if ok {
		empty := false
		if kind(e.ContentBlock, in) == '{' {
			first, err := firstMember(e.ContentBlock, in)
			if err != nil {
				return err
			}
			empty = first < 0
		}
		bl.startInput = !empty
	}
	a.blocks = append(a.blocks, bl)
	return nil
}

// add accumulates a content_block_delta's delta d into the block.
func (bl *blockAcc) add(d messagesDelta) error {
	switch d.Type {
	case "text_delta":
		bl.text.WriteString(d.Text)
	case "thinking_delta":
		bl.thinking.WriteString(d.Thinking)
	case "signature_delta":
		bl.signature.WriteString(d.Signature)
	case "input_json_delta":
		if d.PartialJSON != "" && bl.startInput {
			// The SDKs add the fragments to the start's input
			// (anthropic-sdk-go replaces only an empty {}): the client
			// would read a text the guard cannot.
			return unguardable(inputTwice, nil)
		}
		bl.partial.WriteString(d.PartialJSON)
		bl.hasPartial = true
	case "citations_delta":
		bl.citations = append(bl.citations, d.Citation)
	default:
		// A delta the guard does not read would change a block the client
		// reads (compaction_delta among them, which this decoder does not
		// read).
		return unguardable(unknownDelta, fmt.Errorf("type %.64q", d.Type))
	}
	return nil
}

// held is what the parsed event e, of n bytes, adds to what the
// assembler and its gate hold.
func (a *messagesAssembler) held(e *messagesEvent, n int) int {
	switch e.Type {
	case "message_start", "content_block_start", "message_delta", "message_stop":
		return n
	case "content_block_delta":
		d := e.delta
		if d.Type == "citations_delta" {
			return n // the citation is kept as the event has it
		}
		return len(d.Text) + len(d.Thinking) + len(d.Signature) + len(d.PartialJSON)
	}
	return 0
}

// block is the assembled content block.
func (bl *blockAcc) block() ([]byte, error) {
	b := bl.start
	var err error
	set := func(k string, v []byte) {
		if err == nil {
			b, err = setAt(b, nil, k, v)
		}
	}
	switch bl.typ {
	case "text":
		set("text", marshalString(bl.text.String()))
	case "thinking":
		set("thinking", marshalString(bl.thinking.String()))
		set("signature", marshalString(bl.signature.String()))
	}
	if bl.hasPartial {
		p := bl.partial.String()
		switch {
		case strings.TrimSpace(p) == "":
			// Nothing streamed: the start's input stands.
		case json.Valid([]byte(p)):
			set("input", compact([]byte(p)))
		default:
			set("input", marshalString(p)) // invalid JSON, kept as text
		}
	}
	if len(bl.citations) > 0 {
		set("citations", append(append([]byte("["), joinRaw(bl.citations)...), ']'))
	}
	return b, err
}

func (a *messagesAssembler) response() ([]byte, error) {
	b, err := a.assemble()
	return b, unreadable(anthropicUnread, err)
}

// assemble is response.
func (a *messagesAssembler) assemble() ([]byte, error) {
	if a.message == nil {
		return nil, fmt.Errorf("%w: anthropic stream without message_start", errJSON)
	}
	content := make([][]byte, len(a.blocks))
	for i, bl := range a.blocks {
		b, err := bl.block()
		if err != nil {
			return nil, err
		}
		content[i] = b
	}
	b, err := setAt(a.message, nil, "content", append(append([]byte("["), joinRaw(content)...), ']'))
	if err != nil {
		return nil, err
	}
	// message_delta's delta (stop_reason, stop_sequence, …) and usage
	// overwrite the start's.
	for _, d := range []struct {
		src  []byte
		path []any
	}{{a.delta, nil}, {a.usage, []any{"usage"}}} {
		if len(d.src) == 0 {
			continue
		}
		r, err := root(d.src)
		if err != nil {
			return nil, err
		}
		ms, err := objectMembers(d.src, r)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if b, err = setAt(b, d.path, m.key, raw(d.src, m.v)); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// messagesGate is the streamGate of Anthropic Messages. Message.Accumulate
// takes content blocks in index order without gaps, so the client's block
// indexes run on across attempts.
type messagesGate struct {
	w        io.Writer
	attempt  int
	asm      *messagesAssembler
	started  bool // message_start reached the client
	holding  bool
	passed   int // blocks of the first attempt that reached the client
	terminal []streamEvent
	ended    bool
}

func newMessagesGate(w io.Writer) *messagesGate {
	return &messagesGate{w: w, asm: &messagesAssembler{}}
}

func (g *messagesGate) event(ev streamEvent) (bool, error) {
	if g.ended {
		return true, nil
	}
	done, err := g.asm.add(ev)
	if err != nil {
		return done, err
	}
	e := g.asm.last // add parsed it
	ev.parsed = e   // for the gates outside
	first := g.attempt == 0
	switch e.Type {
	case "message_start":
		if first {
			g.started = true
			return done, writeEvent(g.w, ev)
		}
	case "ping":
		if first && !g.holding {
			return done, writeEvent(g.w, ev)
		}
	case "content_block_start":
		if bl := g.asm.blocks[e.Index]; bl.typ == "tool_use" {
			g.holding = true
		}
		if first && !g.holding {
			g.passed++
			return done, writeEvent(g.w, ev)
		}
	case "content_block_delta", "content_block_stop":
		if first && e.Index < g.passed {
			return done, writeEvent(g.w, ev)
		}
	case "message_delta", "message_stop":
		g.terminal = append(g.terminal, ev)
	}
	return done, nil
}

func (g *messagesGate) response() ([]byte, error) { return g.asm.response() }

func (g *messagesGate) current() assembler { return g.asm }

func (g *messagesGate) write(typ string, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return writeEvent(g.w, streamEvent{Event: typ, Data: b})
}

// emitBlock writes the block at sp of resp whole as the client's block
// idx: start, one delta per accumulated field, stop.
func (g *messagesGate) emitBlock(idx int, resp []byte, sp span) error {
	start, deltas, err := messagesBlockDeltas(resp, sp)
	if err != nil {
		return err
	}
	if err := g.write("content_block_start", struct {
		Type         string          `json:"type"`
		Index        int             `json:"index"`
		ContentBlock json.RawMessage `json:"content_block"`
	}{"content_block_start", idx, start}); err != nil {
		return err
	}
	for _, d := range deltas {
		if err := g.write("content_block_delta", struct {
			Type  string           `json:"type"`
			Index int              `json:"index"`
			Delta messagesDeltaOut `json:"delta"`
		}{"content_block_delta", idx, d}); err != nil {
			return err
		}
	}
	return g.write("content_block_stop", struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}{"content_block_stop", idx})
}

// messagesDeltaOut is the delta of a content_block_delta the gate writes.
type messagesDeltaOut struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

// messagesBlockDeltas splits the block at sp of resp into the block its
// content_block_start carries (its accumulated fields empty) and the
// deltas that fill them: a text block's text, a thinking block's thinking
// and signature, a tool_use block's input (as text: invalid JSON is kept
// as it came). Any other block starts whole, with no delta.
func messagesBlockDeltas(resp []byte, sp span) ([]byte, []messagesDeltaOut, error) {
	typ, err := optStr(resp, sp, "type")
	if err != nil {
		return nil, nil, err
	}
	blk := raw(resp, sp)
	switch typ {
	case "text":
		s, err := optStr(resp, sp, "text")
		if err != nil {
			return nil, nil, err
		}
		start, err := setAt(blk, nil, "text", []byte(`""`))
		return start, []messagesDeltaOut{{Type: "text_delta", Text: &s}}, err
	case "thinking":
		th, err := optStr(resp, sp, "thinking")
		if err != nil {
			return nil, nil, err
		}
		sig, err := optStr(resp, sp, "signature")
		if err != nil {
			return nil, nil, err
		}
		start, err := setAt(blk, nil, "thinking", []byte(`""`))
		if err == nil {
			start, err = setAt(start, nil, "signature", []byte(`""`))
		}
		return start, []messagesDeltaOut{{Type: "thinking_delta", Thinking: &th}, {Type: "signature_delta", Signature: &sig}}, err
	case "tool_use":
		in, ok, err := field(resp, sp, "input")
		if err != nil || !ok {
			return blk, nil, err
		}
		s := string(compact(raw(resp, in)))
		if kind(resp, in) == '"' { // invalid JSON, kept as text
			if s, err = str(resp, in); err != nil {
				return nil, nil, err
			}
		}
		start, err := setAt(blk, nil, "input", []byte(`{}`))
		return start, []messagesDeltaOut{{Type: "input_json_delta", PartialJSON: &s}}, err
	}
	return blk, nil, nil
}

func (g *messagesGate) accept(resp []byte) error {
	if g.ended {
		return nil
	}
	g.ended = true
	blocks, uses, err := messagesToolUses(resp)
	if err != nil {
		return err
	}
	if !g.started {
		if err := g.start(resp); err != nil {
			return err
		}
	}
	emit, err := g.acceptedBlocks(resp, blocks, uses)
	if err != nil {
		return err
	}
	for k, i := range emit {
		if err := g.emitBlock(g.passed+k, resp, blocks[i]); err != nil {
			return err
		}
	}
	return g.end(resp)
}

// start writes message_start from resp when the first attempt's never
// reached the client (it failed before).
func (g *messagesGate) start(resp []byte) error {
	r, err := root(resp)
	if err != nil {
		return err
	}
	start, err := dropMembers(resp, r, func(m member) bool { return m.key == "content" })
	if err == nil {
		start, err = setAt(start, nil, "content", []byte("[]"))
	}
	if err != nil {
		return err
	}
	return g.write("message_start", struct {
		Type    string          `json:"type"`
		Message json.RawMessage `json:"message"`
	}{"message_start", start})
}

// acceptedBlocks returns the indexes of resp's blocks the client reads:
// for the first attempt those the client has not read; for a later one
// its tool_use blocks (uses) or, when it has none (the model answered in
// text after a re-ask, or a stand-in answer), its text blocks, since that
// text is the answer.
func (g *messagesGate) acceptedBlocks(resp []byte, blocks []span, uses []int) ([]int, error) {
	var emit []int
	switch {
	case g.attempt == 0:
		for i := g.passed; i < len(blocks); i++ {
			emit = append(emit, i)
		}
	case len(uses) > 0:
		emit = uses
	default:
		for i, b := range blocks {
			if typ, err := optStr(resp, b, "type"); err != nil {
				return nil, err
			} else if typ == "text" {
				emit = append(emit, i)
			}
		}
	}
	return emit, nil
}

// end writes the attempt's held terminal events (a message_delta from
// resp when none was held), then message_stop unless one was held.
func (g *messagesGate) end(resp []byte) error {
	if len(g.terminal) == 0 {
		md, err := messagesDeltaOf(resp)
		if err != nil {
			return err
		}
		g.terminal = []streamEvent{{Event: "message_delta", Data: md}}
	}
	sawStop := false
	for _, t := range g.terminal {
		if e, ok := t.parsed.(*messagesEvent); ok {
			sawStop = sawStop || e.Type == "message_stop"
		}
		if err := writeEvent(g.w, t); err != nil {
			return err
		}
	}
	if !sawStop {
		return writeEvent(g.w, streamEvent{Event: "message_stop", Data: []byte(`{"type":"message_stop"}`)})
	}
	return nil
}

// messagesDeltaOf is the message_delta event that ends resp: its stop
// reason, stop sequence and usage.
func messagesDeltaOf(resp []byte) ([]byte, error) {
	var r struct {
		StopReason   *string         `json:"stop_reason"`
		StopSequence *string         `json:"stop_sequence"`
		Usage        json.RawMessage `json:"usage"`
	}
	if err := decodeResponse(resp, &r); err != nil {
		return nil, err
	}
	type stop struct {
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	return marshal(struct {
		Type  string          `json:"type"`
		Delta stop            `json:"delta"`
		Usage json.RawMessage `json:"usage,omitempty"`
	}{Type: "message_delta", Delta: stop{r.StopReason, r.StopSequence}, Usage: r.Usage})
}

func (g *messagesGate) reject() {
	g.attempt++
	g.asm = &messagesAssembler{}
	g.holding = false
	g.terminal = nil
}

func (g *messagesGate) fail(typ, msg string) error {
	if g.ended {
		return nil
	}
	g.ended = true
	return writeEvent(g.w, streamEvent{Event: "error", Data: messagesWire{}.errorBody(0, typ, msg)})
}

func (g *messagesGate) abort(ev streamEvent) error {
	if g.ended {
		return nil
	}
	g.ended = true
	if ev.Event == "" {
		ev.Event = "error"
	}
	return writeEvent(g.w, ev)
}

// opening reports whether ev only opens the stream: message_start, ping
// and content_block_start carry nothing of the answer yet.
func (messagesWire) opening(ev streamEvent) bool {
	switch messagesEventType(ev) {
	case "message_start", "ping", "content_block_start":
		return true
	}
	return false
}

// messagesEventType is ev's type: its parsed form's when a gate parsed
// it, else read from its data ("" when it has none).
func messagesEventType(ev streamEvent) string {
	if e, ok := ev.parsed.(*messagesEvent); ok {
		return e.Type
	}
	return dataType(ev.Data)
}

// framing: server-sent events.
func (messagesWire) framing() framing { return sseFraming{} }
