package httpguard

import (
	"fmt"
	"unicode/utf8"
)

// The hand decoder of an Anthropic stream event (messagesParsed).
// stream_decode.go says why stream events are decoded by hand, and
// holds the parts every decoder shares.
//
// An event is read in one pass: its members are walked as its bytes are
// checked, each value checked as it is skipped, where a check of the
// whole event, then a walk of it, then a check and a walk of its delta
// read the bytes five times over. It reads what encoding/json would read
// of the event into a struct of its members (type, index, message,
// content_block, delta, usage, and the delta's type, text, thinking,
// signature, partial_json and citation), fails where that fails, and
// reads keys by the rule of keys.go (FuzzMessagesParsed holds it to the
// two-pass decoder, which FuzzStreamEvents holds to encoding/json).

// messagesParsed is what the gate reads of an Anthropic stream event: of
// its members, those its type reads, in slices of the event's data where
// they are its bytes (an event's data is never written again).
type messagesParsed struct {
	// typ is the event's type: one of messagesType's constants for the
	// protocol's events.
	typ   string
	index int
	// raw is the member the event's type reads, as it came:
	// message_start's message, content_block_start's content_block,
	// message_delta's delta; for content_block_delta, the text the delta
	// adds (decoded: text_delta's text, thinking_delta's thinking,
	// signature_delta's signature, input_json_delta's partial_json), or
	// citations_delta's citation as it came. nil when absent.
	raw []byte
	// usage is message_delta's usage, nil when absent.
	usage []byte
	// sub is content_block_start's block type, and content_block_delta's
	// delta type.
	sub string
	// text is, for content_block_delta, the length of its delta's text,
	// thinking, signature and partial_json together, whatever its type:
	// what the assembler counts of it (held).
	text int
}

// The members of an event that decodeMessagesParsed reads, as marked in
// seen.
const (
	evType = iota
	evIndex
	evMessage
	evContentBlock
	evDelta
	evUsage
)

// parseMessagesEventInto parses the Anthropic stream event ev into e,
// which is zero, and returns it: the members its type reads (see
// messagesParsed), the content block's type of a content_block_start and
// the delta of a content_block_delta; null is an event of no type. An
// error event is an *upstreamStreamError.
func parseMessagesEventInto(ev streamEvent, e *messagesParsed) (*messagesParsed, error) {
	data := ev.Data
	var sp eventSpans
	if err := walkMessagesEvent(data, e, &sp); err != nil {
		return nil, eventError("anthropic event: ", err)
	}
	if e.typ == "error" || ev.Event == "error" {
		return nil, upstreamEventError(data)
	}
	switch e.typ {
	case "message_start":
		e.raw = rawOf(data, sp[spMessage])
	case "content_block_start":
		e.raw = rawOf(data, sp[spContentBlock])
		var err error
		if e.sub, err = blockTypeOf(data, sp[spContentBlock]); err != nil {
			return nil, eventError("anthropic content block: ", err)
		}
	case "message_delta":
		e.raw, e.usage = rawOf(data, sp[spDelta]), rawOf(data, sp[spUsage])
	case "content_block_delta":
		if err := readMessagesDelta(data, sp[spDelta], e); err != nil {
			return nil, eventError("", err)
		}
	}
	return e, nil
}

// eventSpans are the values of an event's members message, content_block,
// delta and usage, at spMessage …; zero when absent.
type eventSpans [spUsage + 1]span

// The members of an event kept as spans, in eventSpans: evMessage …
// evUsage, less evMessage.
const (
	spMessage = iota
	spContentBlock
	spDelta
	spUsage
)

// eventError is errJSON for an event that does not read: what, then err.
// The errors of a parse are made in functions of their own, so that the
// frames of every event's parse keep no room for their arguments.
func eventError(what string, err error) error {
	return fmt.Errorf("%w: %s%w", errJSON, what, err)
}

// upstreamEventError is the upstream's error event: its data, copied.
func upstreamEventError(data []byte) error {
	return &upstreamStreamError{Data: append([]byte(nil), data...)}
}

// blockTypeOf is typeOf of a content block: the usual block types,
// spelled without escapes, are read without an allocation.
func blockTypeOf(b []byte, sp span) (string, error) {
	if sp.end <= sp.start || kind(b, sp) != '{' {
		return "", nil
	}
	v, ok, err := field(b, sp, "type")
	if err != nil || !ok || kind(b, v) != '"' {
		return "", err
	}
	switch q := raw(b, v); string(q) {
	case `"text"`:
		return "text", nil
	case `"thinking"`:
		return "thinking", nil
	case `"redacted_thinking"`:
		return "redacted_thinking", nil
	case `"tool_use"`:
		return "tool_use", nil
	default:
		return unquote(q)
	}
}

// rawOf is the bytes of sp, nil for the zero span of a member absent.
func rawOf(b []byte, sp span) []byte {
	if sp.end <= sp.start {
		return nil
	}
	return b[sp.start:sp.end:sp.end]
}

// walkMessagesEvent checks that data is one JSON value and reads the
// event's type and index into e and the spans of its other members into
// sp: a value other than an object or null is an error, as a key read
// twice or only in another case, a type that is not a string and an index
// that is not an integer are; of those, the first in the event, once the
// whole event has been checked as JSON.
func walkMessagesEvent(data []byte, e *messagesParsed, sp *eventSpans) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return notObject(data, i)
	}
	var (
		s     seen
		first error // the first member's error
	)
	var m checkedMembers
	m.open(data, i)
	for first == nil && m.next() {
		first = messagesEventMember(data, &m.it, &s, e, sp)
	}
	if !m.ok() {
		return errJSON
	}
	return first
}

// notObject is walkMessagesEvent's error for an event whose value,
// starting at data[i], is not an object: none for null.
func notObject(data []byte, i int) error {
	switch {
	case i < len(data) && data[i] == 'n':
		if j := literal(data, i, "null"); j < 0 || skipSpace(data, j) != len(data) {
			return errJSON
		}
		return nil
	case !validJSON(data):
		return errJSON
	}
	return fmt.Errorf("%w: want an object", errJSON)
}

// messagesEventMember reads the event's member at it.k, it.v.
func messagesEventMember(data []byte, it *memberIter, s *seen, e *messagesParsed, sp *eventSpans) error {
	field := eventField(it)
	if field < 0 {
		return nil
	}
	if err := s.mark(it, field); err != nil {
		return err
	}
	switch field {
	case evType:
		return decodeMessagesType(data, it.v, &e.typ)
	case evIndex:
		return decodeInt(data, it.v, &e.index)
	}
	sp[field-evMessage] = it.v
	return nil
}

// eventField returns the event member (evType … evUsage) the iterator's
// member's key names, as memberIter.is matches it, -1 for none: a key
// spelled exactly as one is found by one switch, any other by is.
func eventField(it *memberIter) int {
	q := raw(it.b, it.k)
	f := -1
	switch string(q[1 : len(q)-1]) {
	case "type":
		f = evType
	case "index":
		f = evIndex
	case "message":
		f = evMessage
	case "content_block":
		f = evContentBlock
	case "delta":
		f = evDelta
	case "usage":
		f = evUsage
	default:
		return foldedField(it, evUsage, eventKey)
	}
	it.name, it.folded = eventKey(f), false
	return f
}

// eventKey is the key of the event member f.
func eventKey(f int) string {
	switch f {
	case evType:
		return "type"
	case evIndex:
		return "index"
	case evMessage:
		return "message"
	case evContentBlock:
		return "content_block"
	case evDelta:
		return "delta"
	}
	return "usage"
}

// foldedField returns the first of the members 0 … last whose key (key(f):
// protocol keys, none of which matches another without regard to case)
// the iterator's member's key is, as memberIter.is matches it, -1 for
// none: the keys not spelled exactly as one, which a switch did not find.
func foldedField(it *memberIter, last int, key func(int) string) int {
	for f := 0; f <= last; f++ {
		if it.is(key(f)) {
			return f
		}
	}
	return -1
}

// The members of a delta that readMessagesDelta reads, as marked in
// seen; the four texts first, as they index its texts.
const (
	dText = iota
	dThinking
	dSignature
	dPartialJSON
	dType
	dCitation
)

// readMessagesDelta decodes a content_block_delta's delta, the value at
// sp of data (checked as JSON already; zero when the event has none), into
// e.sub, e.raw and e.text (see messagesParsed).
func readMessagesDelta(data []byte, sp span, e *messagesParsed) error {
	if sp.end <= sp.start {
		return errJSON // as encoding/json refuses no input
	}
	if kind(data, sp) == 'n' {
		return nil
	}
	var it memberIter
	if err := it.open(data, sp); err != nil {
		return err
	}
	var (
		s        seen
		texts    [dPartialJSON + 1][]byte
		citation []byte
		err      error
	)
	for it.next() {
		field := deltaField(&it)
		if field < 0 {
			continue
		}
		if err := s.mark(&it, field); err != nil {
			return err
		}
		switch field {
		case dType:
			err = decodeMessagesType(data, it.v, &e.sub)
		case dCitation:
			citation = rawOf(data, it.v)
		default:
			err = decodeText(data, it.v, &texts[field])
		}
		if err != nil {
			return err
		}
	}
	if it.err != nil {
		return it.err
	}
	for _, t := range texts {
		e.text += len(t)
	}
	switch e.sub {
	case "text_delta":
		e.raw = texts[dText]
	case "thinking_delta":
		e.raw = texts[dThinking]
	case "signature_delta":
		e.raw = texts[dSignature]
	case "input_json_delta":
		e.raw = texts[dPartialJSON]
	case "citations_delta":
		e.raw = citation
	}
	return nil
}

// deltaField is eventField of a delta's members (dText … dCitation).
func deltaField(it *memberIter) int {
	q := raw(it.b, it.k)
	f := -1
	switch string(q[1 : len(q)-1]) {
	case "text":
		f = dText
	case "thinking":
		f = dThinking
	case "signature":
		f = dSignature
	case "partial_json":
		f = dPartialJSON
	case "type":
		f = dType
	case "citation":
		f = dCitation
	default:
		return foldedField(it, dCitation, deltaKey)
	}
	it.name, it.folded = deltaKey(f), false
	return f
}

// deltaKey is the key of the delta member f.
func deltaKey(f int) string {
	switch f {
	case dText:
		return "text"
	case dThinking:
		return "thinking"
	case dSignature:
		return "signature"
	case dPartialJSON:
		return "partial_json"
	case dType:
		return "type"
	}
	return "citation"
}

// decodeText is decodeString into bytes: the string's own bytes where
// they are its text (no escape, control byte or quote, valid UTF-8: what
// plainString takes), without a copy, else decoded once into bytes of its
// own (unquotedBytes); null leaves *dst as it is.
func decodeText(b []byte, sp span, dst *[]byte) error {
	if kind(b, sp) == '"' {
		in := b[sp.start+1 : sp.end-1]
		if plainText(in) {
			*dst = in[:len(in):len(in)]
			return nil
		}
	}
	switch kind(b, sp) {
	case 'n':
		return nil
	case '"':
		t, err := unquotedBytes(raw(b, sp))
		if err != nil {
			return err
		}
		*dst = t[:len(t):len(t)]
		return nil
	}
	return fmt.Errorf("%w: want a string", errJSON)
}

// plainText reports whether the inside of a JSON string is its text, as
// plainString does.
func plainText(in []byte) bool {
	ascii := true
	for _, c := range in {
		if c < ' ' || c == '"' || c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(in)
}

// decodeMessagesType is decodeString for an event's or a delta's type: a
// type of the protocol, spelled without escapes, is the constant, so
// reading it allocates nothing.
func decodeMessagesType(data []byte, sp span, dst *string) error {
	if kind(data, sp) == '"' && sp.end-sp.start >= 2 {
		if t, ok := messagesType(data[sp.start+1 : sp.end-1]); ok {
			*dst = t
			return nil
		}
	}
	return decodeString(data, sp, dst)
}

// messagesType returns the type of an Anthropic event or delta whose
// bytes are b, ok false for another.
func messagesType(b []byte) (string, bool) {
	switch string(b) {
	case "message_start":
		return "message_start", true
	case "ping":
		return "ping", true
	case "content_block_start":
		return "content_block_start", true
	case "content_block_delta":
		return "content_block_delta", true
	case "content_block_stop":
		return "content_block_stop", true
	case "message_delta":
		return "message_delta", true
	case "message_stop":
		return "message_stop", true
	case "text_delta":
		return "text_delta", true
	case "thinking_delta":
		return "thinking_delta", true
	case "signature_delta":
		return "signature_delta", true
	case "input_json_delta":
		return "input_json_delta", true
	case "citations_delta":
		return "citations_delta", true
	}
	return "", false
}
