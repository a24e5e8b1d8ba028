package httpguard

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ConverseStream, as the AWS event stream carries it (eventstream.go),
// each event's payload a JSON object:
//
//	messageStart       {"role":"assistant"}
//	contentBlockStart  {"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":…,"name":…}}}
//	contentBlockDelta  {"contentBlockIndex":0,"delta":{"text":…}}, {"delta":{"toolUse":{"input":"{\"ci"}}},
//	                   {"delta":{"reasoningContent":{"text"|"signature"|"redactedContent":…}}}
//	contentBlockStop   {"contentBlockIndex":0}
//	messageStop        {"stopReason":"tool_use","additionalModelResponseFields":…}
//	metadata           {"usage":{…},"metrics":{…},…}
//
// A text or reasoning block has no contentBlockStart: its first delta
// starts it. A toolUse's input arrives as string fragments of its JSON.
// The SDK's reader (aws-sdk-go-v2's ConverseStreamEventStream) takes the
// events one by one; the program assembles them, so the gate keeps the
// block indexes running on across attempts, as for Anthropic.

// bedrockEvent is what the wire code reads of a ConverseStream event,
// decoded by hand (decodeBedrockEvent).
type bedrockEvent struct {
	typ   string        // the event type (streamEvent.Event)
	Index *int          `json:"contentBlockIndex"`
	Start *bedrockStart `json:"start"`
	Delta *bedrockDelta `json:"delta"`
	// others: the members of a start or delta the decoder does not read
	// (an image, a citation, a tool result), which would change a block
	// the client reads.
	others string
	// own holds what the pointers above point to, so that an event is one
	// allocation.
	own struct {
		index                                    int
		start                                    bedrockStart
		delta                                    bedrockDelta
		toolUse                                  bedrockToolUseDelta
		reasoning                                bedrockReasoningDelta
		text, reasoningText, signature, redacted string
	}
}

// bedrockStart is a contentBlockStart's start.
type bedrockStart struct {
	ToolUse json.RawMessage `json:"toolUse"`
}

// bedrockDelta is a contentBlockDelta's delta.
type bedrockDelta struct {
	Text      *string                `json:"text"`
	ToolUse   *bedrockToolUseDelta   `json:"toolUse"`
	Reasoning *bedrockReasoningDelta `json:"reasoningContent"`
}

// bedrockToolUseDelta is a fragment of a toolUse block's input.
type bedrockToolUseDelta struct {
	Input string `json:"input"`
}

// bedrockReasoningDelta is a part of a reasoning block.
type bedrockReasoningDelta struct {
	Text      *string `json:"text"`
	Signature *string `json:"signature"`
	Redacted  *string `json:"redactedContent"`
}

// Why a Bedrock stream cannot be guarded (unguardableError's why).
const (
	bedrockUnknownEvent = "bedrock stream event of an unknown type"
	bedrockUnknownDelta = "bedrock content block delta or start of an unknown kind"
)

// bedrockStreamError is an exception ConverseStream sent in place of an
// event (throttlingException, modelStreamErrorException, …). Its
// *upstreamStreamError holds the message as it came, framed, for the gate
// that ends the client's stream with it (abort); ErrorCode and StatusCode
// let package retry classify it as the AWS SDK would.
type bedrockStreamError struct {
	typ     string // the exception type, as the header names it
	payload []byte
	framed  *upstreamStreamError
}

func (e *bedrockStreamError) Error() string {
	return "httpguard: bedrock stream exception " + e.typ + ": " + preview(e.payload)
}

func (e *bedrockStreamError) Unwrap() error { return e.framed }

// ErrorCode is the exception's type as the AWS SDK names its error
// (ThrottlingException).
func (e *bedrockStreamError) ErrorCode() string {
	r, n := utf8.DecodeRuneInString(e.typ)
	return string(unicode.ToUpper(r)) + e.typ[n:]
}

// StatusCode is the HTTP status Bedrock gives the same exception before a
// stream begins; 0 for one whose status would misclassify it
// (modelStreamErrorException's 424, which the AWS SDK retries).
func (e *bedrockStreamError) StatusCode() int {
	switch e.typ {
	case "throttlingException":
		return http.StatusTooManyRequests
	case "internalServerException":
		return http.StatusInternalServerError
	case "serviceUnavailableException":
		return http.StatusServiceUnavailable
	case "validationException":
		return http.StatusBadRequest
	}
	return 0
}

// parseBedrockEvent returns ev parsed: the one a gate parsed, else parsed
// now. An exception or error message is a *bedrockStreamError.
func parseBedrockEvent(ev streamEvent) (*bedrockEvent, error) {
	if e, ok := ev.parsed.(*bedrockEvent); ok {
		return e, nil
	}
	switch {
	case strings.HasPrefix(ev.Event, exceptionPrefix), strings.HasPrefix(ev.Event, errorPrefix):
		typ := strings.TrimPrefix(strings.TrimPrefix(ev.Event, exceptionPrefix), errorPrefix)
		return nil, &bedrockStreamError{typ: typ, payload: ev.Data,
			framed: &upstreamStreamError{Data: formatEventStream(ev)}}
	}
	e := &bedrockEvent{typ: ev.Event}
	switch ev.Event {
	case "messageStart", "messageStop", "metadata":
		if _, err := parseBody(ev.Data); err != nil {
			return nil, err
		}
		return e, nil
	case "contentBlockStart", "contentBlockDelta", "contentBlockStop":
		if err := decodeBedrockEvent(ev.Data, e); err != nil {
			return nil, err
		}
	default:
		return nil, unguardable(bedrockUnknownEvent, fmt.Errorf("type %.64q", ev.Event))
	}
	if ev.Event == "contentBlockStop" {
		e.others = "" // a stop's members change no block
	}
	if e.Index == nil {
		return nil, fmt.Errorf("%w: %s without contentBlockIndex", errJSON, ev.Event)
	}
	return e, nil
}

// bedrockBlockAcc is one content block being assembled.
type bedrockBlockAcc struct {
	kind            string // text, toolUse or reasoningContent
	start           json.RawMessage
	text, signature strings.Builder
	input           []byte
	redacted        []byte
	hasInput        bool
}

// bedrockAssembler assembles a ConverseStream into a Converse response.
type bedrockAssembler struct {
	budget
	message []byte // {"role"} of messageStart
	blocks  []*bedrockBlockAcc
	stop    []byte // messageStop's payload
	meta    []byte // metadata's payload
	// oddStop and oddMeta: messageStop's or metadata's payload has a
	// member response() would not set beside output as the others
	// (bedrockTopKey): calls reads the response then.
	oddStop, oddMeta bool
	last             *bedrockEvent
}

// add takes one event. The bound counts what the assembler and its gate
// hold: an event kept whole by its length, a delta by what it adds.
func (a *bedrockAssembler) add(ev streamEvent) (bool, error) {
	done, err := a.addEvent(ev)
	return done, unreadable(bedrockUnread, err)
}

func (a *bedrockAssembler) addEvent(ev streamEvent) (bool, error) {
	e, err := parseBedrockEvent(ev)
	if err != nil {
		return false, err
	}
	a.last = e
	if e.others != "" {
		return false, unguardable(bedrockUnknownDelta, fmt.Errorf("kind %.64q", e.others))
	}
	held := len(ev.Data)
	switch e.typ {
	case "messageStart":
		if a.message, err = bedrockRole(ev.Data); err != nil {
			return false, err
		}
	case "contentBlockStart":
		if err := a.startToolUse(e); err != nil {
			return false, err
		}
	case "contentBlockDelta":
		bl, err := a.deltaBlock(e)
		if err != nil {
			return false, err
		}
		held, err = bl.add(e)
		if err != nil {
			return false, err
		}
	case "contentBlockStop":
		if *e.Index < 0 || *e.Index >= len(a.blocks) {
			return false, fmt.Errorf("%w: stop of block %d of %d", errJSON, *e.Index, len(a.blocks))
		}
		held = 0
	case "messageStop":
		a.stop, a.oddStop = ev.Data, !bedrockTopKeys(ev.Data)
	case "metadata":
		a.meta, a.oddMeta = ev.Data, !bedrockTopKeys(ev.Data)
		return false, a.take(held)
	}
	if err := a.take(held); err != nil {
		return false, err
	}
	return false, nil
}

// bedrockRole returns messageStart's message, {"role"} alone: Bedrock
// pads its events with a member "p" of random length, which a message
// replayed in a re-ask must not carry.
func bedrockRole(data []byte) ([]byte, error) {
	it, ok, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	var role string
	var s seen
	for ok && it.next() {
		if it.is("role") {
			if err := s.mark(&it, 0); err != nil {
				return nil, err
			}
			if err := decodeString(data, it.v, &role); err != nil {
				return nil, err
			}
		}
	}
	if it.err != nil {
		return nil, it.err
	}
	if needsDecoding([]byte(role)) {
		return append(append([]byte(`{"role":`), marshalString(role)...), '}'), nil
	}
	return []byte(`{"role":"` + role + `"}`), nil
}

// startToolUse takes a contentBlockStart: a toolUse block, the next one.
func (a *bedrockAssembler) startToolUse(e *bedrockEvent) error {
	if *e.Index != len(a.blocks) {
		return fmt.Errorf("%w: block %d starts after %d blocks", errJSON, *e.Index, len(a.blocks))
	}
	if e.Start == nil || len(e.Start.ToolUse) == 0 || string(e.Start.ToolUse) == "null" {
		return unguardable(bedrockUnknownDelta, fmt.Errorf("a start without toolUse"))
	}
	if _, err := parseBody(e.Start.ToolUse); err != nil {
		return err
	}
	a.blocks = append(a.blocks, &bedrockBlockAcc{kind: "toolUse", start: e.Start.ToolUse})
	return nil
}

// deltaBlock returns the block a delta adds to: an existing one, or a text
// or reasoning block the delta starts.
func (a *bedrockAssembler) deltaBlock(e *bedrockEvent) (*bedrockBlockAcc, error) {
	i := *e.Index
	if i >= 0 && i < len(a.blocks) {
		return a.blocks[i], nil
	}
	if i != len(a.blocks) {
		return nil, fmt.Errorf("%w: delta for block %d of %d", errJSON, i, len(a.blocks))
	}
	d := e.Delta
	bl := &bedrockBlockAcc{}
	switch {
	case d == nil:
		return nil, fmt.Errorf("%w: contentBlockDelta without delta", errJSON)
	case d.Text != nil:
		bl.kind = "text"
	case d.Reasoning != nil:
		bl.kind = "reasoningContent"
	default:
		return nil, fmt.Errorf("%w: block %d starts with a toolUse delta", errJSON, i)
	}
	a.blocks = append(a.blocks, bl)
	return bl, nil
}

// add takes a delta of the block; n is what it adds to what is held.
func (bl *bedrockBlockAcc) add(e *bedrockEvent) (n int, err error) {
	d := e.Delta
	if d == nil {
		return 0, fmt.Errorf("%w: contentBlockDelta without delta", errJSON)
	}
	mismatch := func(k string) error {
		return fmt.Errorf("%w: a %s delta for a %s block", errJSON, k, bl.kind)
	}
	if d.Text != nil {
		if bl.kind != "text" {
			return 0, mismatch("text")
		}
		bl.text.WriteString(*d.Text)
		n += len(*d.Text)
	}
	if d.ToolUse != nil {
		if bl.kind != "toolUse" {
			return 0, mismatch("toolUse")
		}
		bl.input = append(bl.input, d.ToolUse.Input...)
		bl.hasInput = true
		n += len(d.ToolUse.Input)
	}
	if r := d.Reasoning; r != nil {
		if bl.kind != "reasoningContent" {
			return 0, mismatch("reasoningContent")
		}
		if r.Text != nil {
			bl.text.WriteString(*r.Text)
			n += len(*r.Text)
		}
		if r.Signature != nil {
			bl.signature.WriteString(*r.Signature)
			n += len(*r.Signature)
		}
		if r.Redacted != nil {
			b, err := base64.StdEncoding.DecodeString(*r.Redacted)
			if err != nil {
				return 0, fmt.Errorf("%w: redactedContent: %v", errJSON, err)
			}
			bl.redacted = append(bl.redacted, b...)
			n += len(*r.Redacted)
		}
	}
	return n, nil
}

// block is the assembled content block.
func (bl *bedrockBlockAcc) block() ([]byte, error) {
	switch bl.kind {
	case "text":
		return append(append([]byte(`{"text":`), marshalString(bl.text.String())...), '}'), nil
	case "reasoningContent":
		if bl.redacted != nil {
			return marshal(map[string]any{"reasoningContent": map[string]any{
				"redactedContent": base64.StdEncoding.EncodeToString(bl.redacted)}})
		}
		return marshal(map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]string{
			"text": bl.text.String(), "signature": bl.signature.String()}}})
	}
	tu := []byte(bl.start)
	in := []byte("{}")
	if p := bl.input; len(bytes.TrimSpace(p)) != 0 {
		if json.Valid(p) {
			in = compact(p)
		} else {
			in = marshalString(string(p)) // invalid JSON, kept as text
		}
	}
	r, err := root(tu)
	if err != nil {
		return nil, err
	}
	e, err := setMember(tu, r, "input", in)
	if err != nil {
		return nil, err
	}
	return append(append([]byte(`{"toolUse":`), apply(tu, e)...), '}'), nil
}

// bedrockTopKeys reports whether every member of the object data is one
// of ConverseStream's messageStop and metadata members (or the padding
// "p"), spelled exactly: set at the top of the response beside output,
// none changes what the response's calls read, nor two of them clash.
func bedrockTopKeys(data []byte) bool {
	r, err := root(data)
	if err != nil {
		return false
	}
	it, err := iterMembers(data, r)
	if err != nil {
		return false
	}
	for it.next() {
		switch string(raw(data, it.k)) {
		case `"p"`, `"stopReason"`, `"additionalModelResponseFields"`, `"usage"`, `"metrics"`, `"trace"`, `"performanceConfig"`:
		default:
			return false
		}
	}
	return it.err == nil
}

// whyStreamShape is why a streamed response whose calls cannot be read
// cannot be guarded, as gateSink.assembledCalls names it.
const whyStreamShape = "the streamed response is not of a shape the guard reads"

// calls lists the calls of the events so far (assembler.calls): each toolUse
// block as response() writes it, read as bedrockWire.calls reads it,
// without the rest of the response. When messageStop or metadata carry a
// member that could change what the calls read (bedrockTopKeys), it reads
// them from response() itself.
func (a *bedrockAssembler) calls() ([]wireCall, error) {
	if a.message == nil || a.oddStop || a.oddMeta {
		resp, err := a.response()
		if err != nil {
			return nil, err
		}
		cs, err := bedrockWire{}.calls(resp)
		if err != nil {
			return nil, unguardable(whyStreamShape, err)
		}
		return cs, nil
	}
	// A block is built first, as response() builds every block before
	// the calls are read, when the start's toolUse has a member block()
	// would replace or clash with ("input"), or keys it might refuse
	// (plainMembers); the others are read from the
	// start and the input as block() would write them. Then all are typed,
	// as bedrockContent types them, before any is read.
	type use struct {
		b     []byte // the ToolUseBlock's bytes
		v     span
		input *bedrockBlockAcc // nil: b holds the input
	}
	var uses []use
	for _, bl := range a.blocks {
		if bl.kind != "toolUse" {
			continue
		}
		r, err := root(bl.start)
		if err != nil {
			return nil, unreadable(bedrockUnread, err)
		}
		if _, has, err := field(bl.start, r, "input"); err == nil && !has && plainMembers(bl.start, r) {
			uses = append(uses, use{bl.start, r, bl})
			continue
		}
		b, err := bl.block()
		if err != nil {
			return nil, unreadable(bedrockUnread, err)
		}
		if r, err = root(b); err == nil {
			var blk bedrockBlock
			if blk, err = bedrockBlockOf(b, r); err == nil {
				r = blk.v
			}
		}
		if err != nil {
			return nil, unguardable(whyStreamShape, unreadable(bedrockUnread, err))
		}
		uses = append(uses, use{b, r, nil})
	}
	client := uses[:0]
	for _, u := range uses {
		typ, err := bedrockOptStr(u.b, u.v, "type")
		if err != nil {
			return nil, unguardable(whyStreamShape, unreadable(bedrockUnread, err))
		}
		if typ != "server_tool_use" {
			client = append(client, u)
		}
	}
	out := make([]wireCall, 0, len(client))
	for _, u := range client {
		var c wireCall
		var err error
		if u.input == nil {
			c, err = bedrockCall(u.b, u.v)
		} else {
			c, err = u.input.call(u.b, u.v)
		}
		if err != nil {
			return nil, unguardable(whyStreamShape, unreadable(bedrockUnread, err))
		}
		out = append(out, c)
	}
	return out, nil
}

// call is the call of the toolUse block bl, whose start's toolUse is the
// object at v of tu, without an input member: what bedrockCall reads of
// block(), which sets the input after the start's members.
func (bl *bedrockBlockAcc) call(tu []byte, v span) (wireCall, error) {
	id, err := bedrockOptStr(tu, v, "toolUseId")
	if err != nil {
		return wireCall{}, err
	}
	name, err := bedrockOptStr(tu, v, "name")
	if err != nil {
		return wireCall{}, err
	}
	args, err := bl.args()
	return wireCall{ID: id, Name: name, Args: args}, err
}

// args is the block's input as bedrockCall reads block()'s: {} when
// blank, the input compacted when it is JSON (a JSON string's text), else
// its text (invalid UTF-8 replaced, as a JSON string holds it).
func (bl *bedrockBlockAcc) args() ([]byte, error) {
	p := bl.input
	switch {
	case len(bytes.TrimSpace(p)) == 0:
		return []byte("{}"), nil
	case json.Valid(p):
		c := p[:len(p):len(p)]
		if bytes.ContainsAny(p, " \t\r\n") {
			c = compact(p)
		}
		if c[0] != '"' {
			return c, nil
		}
		s, err := str(c, span{0, len(c)})
		return []byte(s), err
	case utf8.Valid(p):
		return p[:len(p):len(p)], nil
	}
	q := marshalString(string(p))
	s, err := str(q, span{0, len(q)})
	return []byte(s), err
}

// plainMembers reports whether the keys of the object at sp are ASCII
// without an escape, none given twice: objectMembers reads them as they
// are spelled, and without error.
func plainMembers(b []byte, sp span) bool {
	it, err := iterMembers(b, sp)
	if err != nil {
		return false
	}
	var keys [8][]byte
	n := 0
	for it.next() {
		k := raw(b, it.k)
		if n == len(keys) || needsDecoding(k[1:len(k)-1]) {
			return false
		}
		for _, o := range keys[:n] {
			if bytes.Equal(o, k) {
				return false
			}
		}
		keys[n] = k
		n++
	}
	return it.err == nil
}

// bedrockOptStr is optStr, its string decoded by hand when it has no
// escape.
func bedrockOptStr(b []byte, sp span, key string) (string, error) {
	v, ok, err := field(b, sp, key)
	if err != nil || !ok || kind(b, v) == 'n' {
		return "", err
	}
	if kind(b, v) != '"' {
		return "", fmt.Errorf("%w: want a string", errJSON)
	}
	return unquote(raw(b, v))
}

func (a *bedrockAssembler) response() ([]byte, error) {
	b, err := a.assemble()
	return b, unreadable(bedrockUnread, err)
}

// assemble is response: {"output":{"message":{role, content}}} and the
// members of messageStop and metadata (stopReason, usage, metrics, …).
func (a *bedrockAssembler) assemble() ([]byte, error) {
	if a.message == nil {
		return nil, fmt.Errorf("%w: bedrock stream without messageStart", errJSON)
	}
	content := []byte("[")
	for i, bl := range a.blocks {
		b, err := bl.block()
		if err != nil {
			return nil, err
		}
		if i > 0 {
			content = append(content, ',')
		}
		content = append(content, b...)
	}
	content = append(content, ']')
	r, err := root(a.message)
	if err != nil {
		return nil, err
	}
	e, err := setMember(a.message, r, "content", content)
	if err != nil {
		return nil, err
	}
	out := append(append([]byte(`{"output":{"message":`), apply(a.message, e)...), "}}"...)
	for _, src := range [][]byte{a.stop, a.meta} {
		if out, err = mergeMembers(out, src); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mergeMembers sets the members of the object src (messageStop's,
// metadata's; none when src is empty) in the object out, but the padding
// "p".
func mergeMembers(out, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return out, nil
	}
	sr, err := root(src)
	if err != nil {
		return nil, err
	}
	ms, err := objectMembers(src, sr)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if m.key == "p" {
			continue
		}
		or, err := root(out)
		if err != nil {
			return nil, err
		}
		e, err := setMember(out, or, m.key, raw(src, m.v))
		if err != nil {
			return nil, err
		}
		out = apply(out, e)
	}
	return out, nil
}

// bedrockGate is the streamGate of ConverseStream (see sse.go for a gate's
// life): text and reasoning of the first attempt pass as they come; from
// the first toolUse start on, the attempt is held; messageStop and
// metadata are held to the end.
type bedrockGate struct {
	w        io.Writer
	attempt  int
	asm      *bedrockAssembler
	started  bool // messageStart reached the client
	holding  bool
	passed   int // blocks of the first attempt that reached the client
	terminal []streamEvent
	// held: the first attempt's events that did not reach the client, in
	// order, for release; heldN their bytes. Past MaxBody they are
	// dropped and unheld set: the attempt is accepted as before (its
	// assembly stays bounded by the assembler's budget).
	held   []streamEvent
	heldN  int
	unheld bool
	ended  bool
}

func newBedrockGate(w io.Writer) *bedrockGate {
	return &bedrockGate{w: w, asm: &bedrockAssembler{}}
}

func (g *bedrockGate) event(ev streamEvent) (bool, error) {
	if g.ended {
		return true, nil
	}
	n := len(g.asm.blocks)
	done, err := g.asm.add(ev)
	if err != nil {
		return done, err
	}
	e := g.asm.last
	ev.parsed = e
	first := g.attempt == 0
	switch e.typ {
	case "messageStart":
		if first {
			g.started = true
			return done, writeEvent(g.w, ev)
		}
	case "contentBlockStart":
		g.holding = true
	case "contentBlockDelta":
		if len(g.asm.blocks) > n && first && !g.holding {
			g.passed++ // a text or reasoning block the delta starts
		}
		if first && *e.Index < g.passed {
			return done, writeEvent(g.w, ev)
		}
	case "contentBlockStop":
		if first && *e.Index < g.passed {
			return done, writeEvent(g.w, ev)
		}
	case "messageStop", "metadata":
		g.terminal = append(g.terminal, ev)
	}
	if first {
		return done, g.hold(ev)
	}
	return done, nil
}

// hold keeps an event of the first attempt that did not reach the client,
// for release. What it keeps is bounded on its own, by MaxBody: counted
// against the assembler's budget, a call's input would count twice (its
// deltas held, and the input the assembler builds from them), and a call
// of more than half of MaxBody that passed before would be refused. Past
// the bound the held events are dropped and the attempt is accepted as
// before, written anew from its assembly.
func (g *bedrockGate) hold(ev streamEvent) error {
	if g.unheld {
		return nil
	}
	if g.heldN += len(ev.Data); g.heldN > MaxBody {
		g.held, g.unheld = nil, true
		return nil
	}
	if g.held == nil {
		g.held = make([]streamEvent, 0, 16)
	}
	g.held = append(g.held, ev)
	return nil
}

// release ends the first attempt with the events it held, as the upstream
// sent them (streamGate.release): the stages accepted its calls unchanged. It
// reports false, having written nothing, for a later attempt, and where
// accept would add what the upstream did not send: a messageStop, or the
// stop of a block the client has not read.
func (g *bedrockGate) release() (bool, error) {
	if g.ended || g.attempt != 0 || !g.started || g.unheld || !g.heldWhole() {
		return false, nil
	}
	g.ended = true
	held := g.held
	g.held = nil
	return true, writeEvents(g.w, held)
}

// heldWhole reports whether the events held end every block the client
// has not read (g.passed on) and the message.
func (g *bedrockGate) heldWhole() bool {
	open := len(g.asm.blocks) - g.passed
	if open < 0 {
		return false
	}
	stopped := make([]bool, open)
	sawStop := false
	for _, ev := range g.held {
		e, _ := ev.parsed.(*bedrockEvent)
		switch {
		case e == nil:
			return false
		case e.typ == "messageStop":
			sawStop = true
		case e.typ == "contentBlockStop" && *e.Index >= g.passed:
			if !stopped[*e.Index-g.passed] {
				stopped[*e.Index-g.passed] = true
				open--
			}
		}
	}
	return sawStop && open == 0
}

func (g *bedrockGate) response() ([]byte, error) { return g.asm.response() }

func (g *bedrockGate) current() assembler { return g.asm }

func (g *bedrockGate) write(typ string, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return writeEvent(g.w, streamEvent{Event: typ, Data: b})
}

// emitBlock writes the block bl of resp whole as the client's block idx:
// a start for a toolUse, one delta per field, a stop.
func (g *bedrockGate) emitBlock(idx int, resp []byte, bl bedrockBlock) error {
	if bl.kind == "toolUse" {
		start, err := dropMembers(resp, bl.v, func(m member) bool { return m.key == "input" })
		if err != nil {
			return err
		}
		if err := g.write("contentBlockStart", struct {
			ContentBlockIndex int                        `json:"contentBlockIndex"`
			Start             map[string]json.RawMessage `json:"start"`
		}{idx, map[string]json.RawMessage{"toolUse": start}}); err != nil {
			return err
		}
	}
	deltas, err := bedrockDeltas(resp, bl)
	if err != nil {
		return err
	}
	for _, d := range deltas {
		if err := g.write("contentBlockDelta", struct {
			ContentBlockIndex int `json:"contentBlockIndex"`
			Delta             any `json:"delta"`
		}{idx, d}); err != nil {
			return err
		}
	}
	return g.write("contentBlockStop", struct {
		ContentBlockIndex int `json:"contentBlockIndex"`
	}{idx})
}

// bedrockDeltas are the deltas that stream the block bl of resp whole: its
// text, its reasoning text and signature or redacted content, or its
// toolUse input in one fragment (the text of an input that is not JSON).
func bedrockDeltas(resp []byte, bl bedrockBlock) ([]any, error) {
	switch bl.kind {
	case "text":
		s, err := str(resp, bl.v)
		if err != nil {
			return nil, err
		}
		return []any{map[string]string{"text": s}}, nil
	case "reasoningContent":
		var rc struct {
			ReasoningText *struct {
				Text      string `json:"text"`
				Signature string `json:"signature"`
			} `json:"reasoningText"`
			RedactedContent *string `json:"redactedContent"`
		}
		if err := json.Unmarshal(raw(resp, bl.v), &rc); err != nil {
			return nil, fmt.Errorf("%w: %v", errJSON, err)
		}
		var out []any
		if rc.RedactedContent != nil {
			out = append(out, map[string]any{"reasoningContent": map[string]string{"redactedContent": *rc.RedactedContent}})
		}
		if t := rc.ReasoningText; t != nil {
			out = append(out, map[string]any{"reasoningContent": map[string]string{"text": t.Text}})
			if t.Signature != "" {
				out = append(out, map[string]any{"reasoningContent": map[string]string{"signature": t.Signature}})
			}
		}
		return out, nil
	case "toolUse":
		input := "{}"
		if in, ok, err := field(resp, bl.v, "input"); err != nil {
			return nil, err
		} else if ok {
			input = string(compact(raw(resp, in)))
			if kind(resp, in) == '"' { // invalid JSON, kept as text
				if input, err = str(resp, in); err != nil {
					return nil, err
				}
			}
		}
		return []any{map[string]any{"toolUse": map[string]string{"input": input}}}, nil
	}
	return nil, fmt.Errorf("httpguard: a %s block cannot be streamed", bl.kind)
}

func (g *bedrockGate) accept(resp []byte) error {
	if g.ended {
		return nil
	}
	g.ended = true
	blocks, uses, err := bedrockContent(resp)
	if err != nil {
		return err
	}
	if !g.started {
		if err := g.write("messageStart", map[string]string{"role": "assistant"}); err != nil {
			return err
		}
	}
	// The blocks: for the first attempt those the client has not read;
	// for a later one its toolUse blocks or, when it has none (text after
	// a re-ask, a stand-in answer), its text blocks.
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
			if b.kind == "text" {
				emit = append(emit, i)
			}
		}
	}
	for k, i := range emit {
		if err := g.emitBlock(g.passed+k, resp, blocks[i]); err != nil {
			return err
		}
	}
	return g.writeTerminal(resp)
}

// writeTerminal writes the held messageStop and metadata, or, when the
// attempt sent none (a stand-in answer), ones made from resp.
func (g *bedrockGate) writeTerminal(resp []byte) error {
	sawStop := false
	for _, t := range g.terminal {
		sawStop = sawStop || t.Event == "messageStop"
	}
	if !sawStop {
		var r struct {
			StopReason string          `json:"stopReason"`
			Additional json.RawMessage `json:"additionalModelResponseFields,omitempty"`
			Usage      json.RawMessage `json:"usage,omitempty"`
			Metrics    json.RawMessage `json:"metrics,omitempty"`
		}
		if err := decodeResponse(resp, &r); err != nil {
			return err
		}
		stop, err := marshal(struct {
			StopReason string          `json:"stopReason"`
			Additional json.RawMessage `json:"additionalModelResponseFields,omitempty"`
		}{r.StopReason, r.Additional})
		if err != nil {
			return err
		}
		evs := []streamEvent{{Event: "messageStop", Data: stop}}
		if len(r.Usage) > 0 && len(g.terminal) == 0 {
			meta, err := marshal(struct {
				Usage   json.RawMessage `json:"usage"`
				Metrics json.RawMessage `json:"metrics,omitempty"`
			}{r.Usage, r.Metrics})
			if err != nil {
				return err
			}
			evs = append(evs, streamEvent{Event: "metadata", Data: meta})
		}
		g.terminal = append(evs, g.terminal...)
	}
	for _, t := range g.terminal {
		if err := writeEvent(g.w, t); err != nil {
			return err
		}
	}
	return nil
}

func (g *bedrockGate) reject() {
	g.attempt++
	g.asm = &bedrockAssembler{}
	g.holding = false
	g.terminal = nil
	g.held = nil
}

// fail ends the client's stream with an exception of type typ, whose
// payload is {"message": msg}: the AWS SDK's reader returns it as an API
// error whose ErrorCode() is typ.
func (g *bedrockGate) fail(typ, msg string) error {
	if g.ended {
		return nil
	}
	g.ended = true
	b, err := marshal(struct {
		Message string `json:"message"`
	}{msg})
	if err != nil {
		return err
	}
	return writeEvent(g.w, streamEvent{Event: exceptionPrefix + typ, Data: b})
}

// abort ends the client's stream with the upstream's exception, which
// ev.Data holds framed (bedrockStreamError).
func (g *bedrockGate) abort(ev streamEvent) error {
	if g.ended {
		return nil
	}
	g.ended = true
	out, err := newEventStreamReader(strings.NewReader(string(ev.Data)), MaxBody).next()
	if err != nil {
		return err
	}
	return writeEvent(g.w, out)
}
