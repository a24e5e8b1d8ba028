package httpguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// parseMessagesEvent returns ev parsed: the one a gate parsed, else
// parsed now.
func parseMessagesEvent(ev streamEvent) (*messagesParsed, error) {
	if e, ok := ev.parsed.(*messagesParsed); ok {
		return e, nil
	}
	return parseMessagesEventInto(ev, new(messagesParsed))
}

// slot returns the next of the events the assembler allocates together,
// zero, for addEvent to parse an event into (each one written once, then
// only read: it is the event's parsed form for the gates outside and for
// release). The first
// slab holds a few events and each next one twice as many as the last, up
// to maxSlab, so that a short stream takes little and a long one few
// allocations.
func (a *messagesAssembler) slot() *messagesParsed {
	if len(a.slab) == cap(a.slab) {
		a.slab = make([]messagesParsed, 0, min(max(2*cap(a.slab), minSlab), maxSlab))
	}
	a.slab = a.slab[:len(a.slab)+1]
	return &a.slab[len(a.slab)-1]
}

// The events an assembler's first slab holds, and the most a slab holds.
// A gate allocates its first slab with itself: 7 events, so that the gate
// (1,728 bytes) fits the 1,792-byte size class, where 8 took it to 2,048;
// the next slab, of 14, fits the 1,408-byte class.
const (
	minSlab = 7
	maxSlab = 64
)

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
	// message is a value of an event checked as JSON: parseBody's check
	// again, but for the JSON.
	if len(message) == 0 {
		return errJSON
	}
	r := span{0, len(message)}
	if kind(message, r) != '{' {
		return fmt.Errorf("%w: want an object", errJSON)
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
	// text is a text block's text, or a thinking block's thinking, and
	// signature a thinking block's signature: the text, thinking and
	// signature deltas' texts, joined (joinText). block() reads no other,
	// so a block keeps no other.
	text, signature []byte
	// partial is the input_json_delta fragments, joined (joinText).
	partial   []byte
	citations [][]byte
	// The start, read once as the block starts (readStart), for builds
	// and call, where they read each of its keys again at every
	// listCalls: id and name are a tool_use block's id and name as
	// optStr reads them, and inputAt the value of its member input where
	// it has one (hasInput).
	id, name string
	inputAt  span
	// startInput: the start has an input other than {} (read in place,
	// allocating nothing).
	startInput bool
	hasPartial bool
	// startBuilds: the start nests within what encoding/json reads where
	// it is in the response, and takes the members its type's block()
	// sets (text; thinking and signature).
	startBuilds bool
	hasInput    bool
	// named: optStr reads the tool_use block's id and name.
	named bool
	// kind is the block's type, of those the assembler reads.
	kind blockKind
}

// blockKind is a content block's type, of those an assembler reads apart
// (a block of another known type is blockOther): a byte beside the
// block's flags, where its name took 16 bytes of every block.
type blockKind uint8

const (
	blockOther blockKind = iota
	blockText
	blockThinking
	blockToolUse
)

// blockKindOf is the kind of the block type typ.
func blockKindOf(typ string) blockKind {
	switch typ {
	case "text":
		return blockText
	case "thinking":
		return blockThinking
	case "tool_use":
		return blockToolUse
	}
	return blockOther
}

// messagesAssembler assembles an Anthropic stream into a message.
type messagesAssembler struct {
	budget
	message []byte
	blocks  []blockAcc
	delta   []byte          // the last message_delta's delta
	usage   []byte          // the last message_delta's usage
	last    *messagesParsed // the event add took last
	// slab holds the events the assembler parsed, allocated together.
	slab []messagesParsed
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

// addEvent is add, but for the error's wrapping: its gate calls it
// itself, one call less on the stack of every event.
func (a *messagesAssembler) addEvent(ev streamEvent) (bool, error) {
	e, ok := ev.parsed.(*messagesParsed) // a.parse, inline
	if !ok {
		var err error
		if e, err = parseMessagesEventInto(ev, a.slot()); err != nil {
			return false, err
		}
	}
	if err := a.take(a.held(e, len(ev.Data))); err != nil {
		return false, err
	}
	a.last = e
	switch e.typ {
	case "message_start":
		if err := startsEmpty(e.raw); err != nil {
			return false, err
		}
		a.message = e.raw
	case "content_block_start":
		return false, a.startBlock(e)
	case "content_block_delta":
		if e.index < 0 || e.index >= len(a.blocks) {
			return false, blockIndexError("delta for block %d of %d", e.index, len(a.blocks))
		}
		return false, a.blocks[e.index].add(e)
	case "message_delta":
		a.delta, a.usage = e.raw, e.usage
	case "message_stop":
		return true, nil
	}
	return false, nil
}

// blockIndexError is errJSON for a block index out of order: format
// (two %d, for the index and the blocks) with index and n. Its own
// function, so that the hot frames that call it keep no room for its
// arguments.
func blockIndexError(format string, index, n int) error {
	return fmt.Errorf("%w: "+format, errJSON, index, n)
}

// startBlock opens the block a content_block_start event e starts.
func (a *messagesAssembler) startBlock(e *messagesParsed) error {
	if e.index != len(a.blocks) {
		return blockIndexError("block %d starts after %d blocks", e.index, len(a.blocks))
	}
	if err := checkBlockType(e.sub); err != nil {
		return err
	}
	bl := blockAcc{start: e.raw, kind: blockKindOf(e.sub)}
	if err := bl.readStart(); err != nil {
		return err
	}
	if bl.hasInput {
		empty := false
		if in := bl.inputAt; kind(e.raw, in) == '{' {
			first, err := firstMember(e.raw, in)
			if err != nil {
				return err
			}
			empty = first < 0
		}
		bl.startInput = !empty
	}
	if a.blocks == nil {
		a.blocks = make([]blockAcc, 0, 4) // most answers' blocks
	}
	a.blocks = append(a.blocks, bl)
	return nil
}

// add accumulates the delta of a content_block_delta event e into the
// block.
func (bl *blockAcc) add(e *messagesParsed) error {
	switch e.sub {
	case "text_delta":
		if bl.kind == blockText {
			bl.text = joinText(bl.text, e.raw)
		}
	case "thinking_delta":
		if bl.kind == blockThinking {
			bl.text = joinText(bl.text, e.raw)
		}
	case "signature_delta":
		if bl.kind == blockThinking {
			bl.signature = joinText(bl.signature, e.raw)
		}
	case "input_json_delta":
		if len(e.raw) > 0 && bl.startInput {
			// The SDKs add the fragments to the start's input
			// (anthropic-sdk-go replaces only an empty {}): the client
			// would read a text the guard cannot.
			return unguardable(inputTwice, nil)
		}
		bl.partial = joinText(bl.partial, e.raw)
		bl.hasPartial = true
	case "citations_delta":
		bl.citations = append(bl.citations, e.raw)
	default:
		// A delta the guard does not read would change a block the client
		// reads (compaction_delta among them, which this decoder does not
		// read).
		return unguardable(unknownDelta, fmt.Errorf("type %.64q", e.sub))
	}
	return nil
}

// joinText returns text with more appended: more itself while text is
// empty (the bytes of an event, never written: a block's text in one
// delta is not copied), else appended to a copy of its own (more's
// capacity ends at its length, so the first append copies).
func joinText(text, more []byte) []byte {
	if len(text) == 0 {
		return more[:len(more):len(more)]
	}
	return append(text, more...)
}

// held is what the parsed event e, of n bytes, adds to what the
// assembler and its gate hold.
func (a *messagesAssembler) held(e *messagesParsed, n int) int {
	switch e.typ {
	case "message_start", "content_block_start", "message_delta", "message_stop":
		return n
	case "content_block_delta":
		if e.sub == "citations_delta" {
			return n // the citation is kept as the event has it
		}
		return e.text
	}
	return 0
}

// readStart reads what builds and call read of the block's start: of its
// members in one pass (doc.fields), input and those block() sets or call
// reads for its type; an error where field would return one for input.
func (bl *blockAcc) readStart() error {
	b := bl.start
	sp := span{0, len(b)}
	var f [3]found
	var keys []string
	switch bl.kind {
	case blockText:
		keys = []string{"input", "text"}
	case blockThinking:
		keys = []string{"input", "thinking", "signature"}
	case blockToolUse:
		keys = []string{"input", "id", "name"}
	default:
		keys = []string{"input"}
	}
	doc{b: b}.fields(sp, keys, f[:len(keys)])
	if f[0].err != nil {
		return f[0].err
	}
	bl.hasInput, bl.inputAt = f[0].ok, f[0].v
	bl.startBuilds = nestsWithin(b, jsonMaxDepth-2)
	switch bl.kind {
	case blockText:
		bl.startBuilds = bl.startBuilds && takes(b, f[1])
	case blockThinking:
		bl.startBuilds = bl.startBuilds && takes(b, f[1]) && takes(b, f[2])
	case blockToolUse:
		var okID, okName bool
		bl.id, okID = foundStr(b, f[1])
		bl.name, okName = foundStr(b, f[2])
		bl.named = okID && okName
	}
	return nil
}

// takes is takesMember of the object b whose key field found as f.
func takes(b []byte, f found) bool {
	if f.err != nil {
		return false
	}
	if !f.ok {
		_, err := objectMembers(b, span{0, len(b)})
		return err == nil
	}
	return true
}

// foundStr is optStr of a block's start (a valid JSON object, as its
// event was) whose key field found as f, decoding the string as optStr
// does without reflection; ok false where optStr fails.
func foundStr(b []byte, f found) (string, bool) {
	switch {
	case f.err != nil:
		return "", false
	case !f.ok || kind(b, f.v) == 'n':
		return "", true
	case kind(b, f.v) != '"':
		return "", false
	}
	s, err := unquote(raw(b, f.v))
	return s, err == nil
}

// input is the input the fragments give the block, ok false when they
// give none (no fragment, or only space: the start's input stands). Valid
// JSON is compacted; invalid JSON is kept as text, a JSON string.
func (bl *blockAcc) input() (in []byte, ok bool) {
	p := bl.partial
	switch {
	case !bl.hasPartial || len(bytes.TrimSpace(p)) == 0:
		return nil, false
	case !validJSON(p):
		return marshalString(string(p)), true
	case !bytes.ContainsAny(p, " \t\r\n"):
		// Compact already: the fragments as they came, never grown
		// again by a later fragment's append.
		return p[:len(p):len(p)], true
	}
	return compact(p), true
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
	switch bl.kind {
	case blockText:
		set("text", marshalString(string(bl.text)))
	case blockThinking:
		set("thinking", marshalString(string(bl.text)))
		set("signature", marshalString(string(bl.signature)))
	}
	if in, ok := bl.input(); ok {
		set("input", in)
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
	for i := range a.blocks {
		b, err := a.blocks[i].block()
		if err != nil {
			return nil, err
		}
		content[i] = b
	}
	return a.envelope(append(append([]byte("["), joinRaw(content)...), ']'))
}

// envelope is message_start's message with content as its content and
// message_delta's delta and usage written over it.
func (a *messagesAssembler) envelope(content []byte) ([]byte, error) {
	b, err := setAt(a.message, nil, "content", content)
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

// streamShape is why a streamed answer whose calls the wire code cannot
// read is unguardable, as gateSink.assembledCalls says it.
const streamShape = "the streamed response is not of a shape the guard reads"

// calls lists the calls of the events so far (assembler.calls): what
// messagesWire.calls reads of response(), read from the blocks as add
// parsed them, without building the response. Where that reading cannot
// be sure to agree with the built one (see listCalls), the response is
// built and read back, so that calls fails where that would.
func (a *messagesAssembler) calls() ([]wireCall, error) {
	if cs, ok := a.listCalls(); ok {
		return cs, nil
	}
	resp, err := a.response()
	if err != nil {
		return nil, err
	}
	cs, err := messagesWire{}.calls(resp)
	if err != nil {
		return nil, unguardable(streamShape, err)
	}
	return cs, nil
}

// listCalls returns the tool_use blocks' calls as messagesCalls reads
// them of response(); ok is false unless response() would be built and
// read without an error and with the blocks as its content: each block's
// start takes the members block() sets (field and objectMembers accept
// it), nothing nests deeper than encoding/json reads, message_delta's
// delta does not set content, and the envelope (message, delta, usage)
// builds.
func (a *messagesAssembler) listCalls() (out []wireCall, ok bool) {
	if a.message == nil || !deltaKeepsContent(a.delta) {
		return nil, false
	}
	if !a.envelopeBuilds() {
		return nil, false
	}
	uses := 0
	for i := range a.blocks {
		if a.blocks[i].kind == blockToolUse {
			uses++
		}
	}
	out = make([]wireCall, 0, uses)
	for i := range a.blocks {
		bl := &a.blocks[i]
		in, inSet := bl.input()
		if !bl.builds(in, inSet) {
			return nil, false
		}
		if bl.kind != blockToolUse {
			continue
		}
		c, ok := bl.call(in, inSet)
		if !ok {
			return nil, false
		}
		out = append(out, c)
	}
	return out, true
}

// envelopeBuilds reports whether the envelope builds (envelope returns
// no error), without building it where every key it reads is plain
// (envelopeBuildsPlain), else by building it.
func (a *messagesAssembler) envelopeBuilds() bool {
	if builds, known := a.envelopeBuildsPlain(); known {
		return builds
	}
	_, err := a.envelope([]byte("[]"))
	return err == nil
}

// envMember is a member of an object the envelope's building reads: its
// key (the inside of its quotes, plain ASCII) and its value.
type envMember struct{ key, val []byte }

// envelopeBuildsPlain reports whether envelope builds, reading the keys of
// the message, the delta, the usage and the message's usage object as its
// setAt calls read them, in the same order, allocating nothing: known is
// false where a key is not plain ASCII (see matchKey: a plain key matches
// another only when both are as long and alike but for ASCII case).
func (a *messagesAssembler) envelopeBuildsPlain() (builds, known bool) {
	var (
		topBuf           [12]envMember
		srcBuf, usageBuf [10]envMember
	)
	// setAt(message, nil, "content", …)
	top, obj, known := envMembers(a.message, topBuf[:0])
	if !known || !obj {
		return false, known
	}
	// content's value is not read again: nil. Its key is stored only when
	// appended (it comes in message_start), as storing it allocates.
	switch n, _, exact := matchPlain(top, []byte("content")); {
	case n > 1 || n == 1 && !exact:
		return false, true
	case n == 0:
		if !distinct(top) {
			return false, true
		}
		top = append(top, envMember{key: []byte("content")})
	}
	var ok bool
	// The delta's members, each by setAt(b, nil, key, value).
	if len(a.delta) > 0 {
		ds, obj, known := envMembers(a.delta, srcBuf[:0])
		if !known || !obj || !distinct(ds) {
			return false, known
		}
		for _, d := range ds {
			if top, ok = setPlain(top, d.key, d.val); !ok {
				return false, true
			}
		}
	}
	// The usage's members, each by setAt(b, ["usage"], key, value).
	if len(a.usage) > 0 {
		us, obj, known := envMembers(a.usage, srcBuf[:0])
		if !known || !obj || !distinct(us) {
			return false, known
		}
		if len(us) == 0 {
			return true, true
		}
		n, i, exact := matchPlain(top, []byte("usage"))
		if n != 1 || !exact {
			return false, true // no usage, or a key error
		}
		u, obj, known := envMembers(top[i].val, usageBuf[:0])
		if !known || !obj {
			return false, known
		}
		for _, m := range us {
			if u, ok = setPlain(u, m.key, m.val); !ok {
				return false, true
			}
		}
	}
	return true, true
}

// envMembers appends the members of the JSON value b (valid JSON, no
// space around it) to ms; obj is false when b is not an object, known
// false when a key is not plain ASCII.
func envMembers(b []byte, ms []envMember) (out []envMember, obj, known bool) {
	sp := span{0, len(b)}
	if kind(b, sp) != '{' {
		return nil, false, true
	}
	it, err := iterMembers(b, sp)
	for err == nil && it.next() {
		key := raw(b, it.k)
		key = key[1 : len(key)-1]
		if !plainASCII(key) {
			return nil, true, false
		}
		ms = append(ms, envMember{key, raw(b, it.v)})
	}
	if err != nil || it.err != nil {
		return nil, true, false
	}
	return ms, true, true
}

// matchPlain is lookup of the plain key in an object of plain keys ms:
// how many keys match it, the last that does, and whether that one is
// spelled exactly.
func matchPlain(ms []envMember, key []byte) (n, i int, exact bool) {
	for j, m := range ms {
		if len(m.key) != len(key) {
			continue
		}
		same := true
		for k := range key {
			if lowerASCII(m.key[k]) != lowerASCII(key[k]) {
				same = false
				break
			}
		}
		if same {
			n, i, exact = n+1, j, string(m.key) == string(key)
		}
	}
	return n, i, exact
}

// setPlain is setMember of key to val in an object of plain keys ms: ok
// false where setMember fails (the key twice, or only in another case;
// not found, and the object's keys not distinct, as objectMembers needs
// them to append it).
func setPlain(ms []envMember, key, val []byte) ([]envMember, bool) {
	n, i, exact := matchPlain(ms, key)
	switch {
	case n > 1 || n == 1 && !exact:
		return ms, false
	case n == 1:
		ms[i].val = val
		return ms, true
	case !distinct(ms):
		return ms, false
	}
	return append(ms, envMember{key, val}), true
}

// distinct reports whether the plain keys of ms are distinct, as
// objectMembers needs them.
func distinct(ms []envMember) bool {
	for i := range ms {
		for j := i + 1; j < len(ms); j++ {
			if string(ms[i].key) == string(ms[j].key) {
				return false
			}
		}
	}
	return true
}

// deltaKeepsContent reports whether message_delta's delta (nil when none
// came) is an object without a member content, in any case: one with it
// would replace the blocks in the assembled response.
func deltaKeepsContent(delta []byte) bool {
	if len(delta) == 0 {
		return true
	}
	r, err := root(delta)
	if err != nil {
		return false
	}
	it, err := iterMembers(delta, r)
	if err != nil {
		return false
	}
	for it.next() {
		if it.is("content") {
			return false
		}
	}
	return it.err == nil
}

// jsonMaxDepth is how many arrays and objects encoding/json reads one
// inside another (its scanner's maxNestingDepth).
const jsonMaxDepth = 10000

// nestsWithin reports whether the JSON value b opens at most max arrays
// and objects one inside another. Each level takes two bytes, so only a
// long value is scanned.
func nestsWithin(b []byte, max int) bool {
	if len(b) < 2*(max+1) {
		return true
	}
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth++; depth > max {
				return false
			}
		case ']', '}':
			depth--
		}
	}
	return true
}

// builds reports whether block() builds the block, whose input (when
// inSet) is in, and the assembled response then reads as JSON: the start
// takes each member block() sets (as setMember finds or appends it), and
// the start (at depth 3 of the response, 2 of its event), each citation
// (5 and 3) and the input (4) nest within what encoding/json reads.
func (bl *blockAcc) builds(in []byte, inSet bool) bool {
	if !bl.startBuilds {
		return false
	}
	if inSet && (!bl.hasInput && !takesMember(bl.start, "input") || !nestsWithin(in, jsonMaxDepth-3)) {
		return false
	}
	if len(bl.citations) > 0 {
		if !takesMember(bl.start, "citations") {
			return false
		}
		for _, c := range bl.citations {
			if !nestsWithin(c, jsonMaxDepth-4) {
				return false
			}
		}
	}
	return true
}

// takesMember reports whether setMember sets key of the object b: the
// key found as field finds it, or the object's members read to append it.
// The members block() sets are protocol keys none of which matches
// another, so each is found or appended in the start as it came.
func takesMember(b []byte, key string) bool {
	sp := span{0, len(b)}
	_, ok, err := field(b, sp, key)
	if err != nil {
		return false
	}
	if !ok {
		_, err = objectMembers(b, sp)
	}
	return err == nil
}

// call is the tool_use block's call as messagesCalls reads it of the
// assembled block, whose input (when inSet) is in; ok is false where that
// read fails.
func (bl *blockAcc) call(in []byte, inSet bool) (c wireCall, ok bool) {
	if !bl.named {
		return c, false
	}
	c.ID, c.Name = bl.id, bl.name
	var err error
	switch {
	case inSet:
		var r span
		if r, err = root(in); err != nil {
			return c, false
		}
		c.Args, err = objectArgs(in, r)
	case bl.hasInput:
		c.Args, err = objectArgs(bl.start, bl.inputAt)
	}
	return c, err == nil
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
	// held is what the first attempt held, every event that did not reach
	// the client, in order, for release.
	held  []streamEvent
	ended bool
	// first is the first attempt's assembler, allocated with the gate,
	// firstSlab the first slab of the events it parses and firstBlocks
	// room for its first blocks: every stream parses a few events into a
	// few blocks, and two allocations less per stream take them.
	first       messagesAssembler
	firstSlab   [minSlab]messagesParsed
	firstBlocks [4]blockAcc
	// terminalBuf holds an attempt's terminal events, message_delta and
	// message_stop (a later attempt's once reject dropped the last's).
	terminalBuf [2]streamEvent
}

func newMessagesGate(w io.Writer) *messagesGate {
	g := &messagesGate{w: w}
	g.asm = &g.first
	g.first.slab, g.first.blocks = g.firstSlab[:0], g.firstBlocks[:0]
	return g
}

func (g *messagesGate) event(ev streamEvent) (bool, error) {
	if g.ended {
		return true, nil
	}
	done, err := g.asm.addEvent(ev) // add, without a frame of its own
	if err != nil {
		return done, unreadable(anthropicUnread, err)
	}
	e := g.asm.last // add parsed it
	ev.parsed = e   // for the gates outside
	if g.attempt > 0 {
		g.hold(ev, e)
		return done, nil
	}
	if g.passes(e) {
		return done, writeEvent(g.w, ev)
	}
	return done, g.keep(ev, e)
}

// keep takes the first attempt's event ev (parsed e) that does not reach
// the client now: held for release, and noted (hold). In a function of
// its own, so that event's frame, on the stack of every event, keeps no
// room for what holding takes.
func (g *messagesGate) keep(ev streamEvent, e *messagesParsed) error {
	switch e.typ {
	case "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
		// Held for release, whole: the event counts by its length, what
		// the assembler counted of it included. An event of a type the
		// wire code does not read is dropped, as accept drops it.
		if err := g.asm.take(len(ev.Data) - g.asm.held(e, len(ev.Data))); err != nil {
			return err
		}
		if g.held == nil {
			g.held = make([]streamEvent, 0, 8) // a few calls' events
		}
		g.held = append(g.held, ev)
	}
	g.hold(ev, e)
	return nil
}

// passes notes what the first attempt's event e tells the gate (the
// client read message_start; a tool_use block holds the rest of the
// attempt; a block reached the client) and reports whether e reaches the
// client now: message_start, and the events before the first tool_use
// block (text and thinking blocks, pings).
func (g *messagesGate) passes(e *messagesParsed) bool {
	switch e.typ {
	case "message_start":
		g.started = true
		return true
	case "ping":
		return !g.holding
	case "content_block_start":
		if g.asm.blocks[e.index].kind == blockToolUse {
			g.holding = true
		}
		if !g.holding {
			g.passed++
		}
		return !g.holding
	case "content_block_delta", "content_block_stop":
		return e.index < g.passed
	}
	return false
}

// hold takes an event ev (parsed e) that does not reach the client now:
// a tool_use block's start holds the rest of the attempt, and
// message_delta and message_stop end it when it is accepted.
func (g *messagesGate) hold(ev streamEvent, e *messagesParsed) {
	switch e.typ {
	case "content_block_start":
		if g.asm.blocks[e.index].kind == blockToolUse {
			g.holding = true
		}
	case "message_delta", "message_stop":
		if g.terminal == nil {
			g.terminal = g.terminalBuf[:0] // both, allocated with the gate
		}
		g.terminal = append(g.terminal, ev)
	}
}

// release ends the first attempt, whose calls the stages accepted
// unchanged, with what it held as the upstream sent it (streamGate.release), then
// message_stop if none came. It reports false, having written nothing,
// for a later attempt, or when accept would write what the upstream did
// not send: message_start (the attempt failed before it) or, when neither
// message_delta nor message_stop came, a message_delta built from the
// response.
func (g *messagesGate) release() (bool, error) {
	if g.ended || g.attempt > 0 || !g.started || len(g.terminal) == 0 {
		return false, nil
	}
	g.ended = true
	sawStop := false
	for _, ev := range g.held {
		if e, ok := ev.parsed.(*messagesParsed); ok {
			sawStop = sawStop || e.typ == "message_stop"
		}
		if err := writeEvent(g.w, ev); err != nil {
			return true, err
		}
	}
	if !sawStop {
		return true, writeEvent(g.w, streamEvent{Event: "message_stop", Data: []byte(`{"type":"message_stop"}`)})
	}
	return true, nil
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
		if e, ok := t.parsed.(*messagesParsed); ok {
			sawStop = sawStop || e.typ == "message_stop"
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
	g.terminal, g.held = nil, nil
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
	if e, ok := ev.parsed.(*messagesParsed); ok {
		return e.typ
	}
	return dataType(ev.Data)
}

// framing: server-sent events.
func (messagesWire) framing() framing { return sseFraming{} }
