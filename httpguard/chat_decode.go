package httpguard

import (
	"fmt"
	"unicode/utf8"
)

// The hand decoder of a chat.completion.chunk (chatChunk).
// stream_decode.go says why stream events are decoded by hand, and
// holds the parts every decoder shares.
//
// A stream is hundreds of chunks, each decoded once per logical call, so
// the decoder allocates little: a chunk of one choice and one tool call
// part decodes into the chunk's own storage (chatChunk.one,
// chatDelta.oneCall), its optional strings point into it, and the strings
// a stream repeats in every chunk (id, model, system_fingerprint,
// service_tier, a call's type) are the previous chunk's, not copies. And
// it reads each byte once: checking the chunk is JSON and decoding it are
// one pass (decodeChatChunkAfter).

// decodeChatChunk decodes data into c.
func decodeChatChunk(data []byte, c *chatChunk) error { return decodeChatChunkAfter(data, c, nil) }

// decodeChatChunkAfter decodes data into c, sharing with prev, the
// stream's chunk before (nil for none), the strings spelled alike.
//
// It reads data in one pass that checks it as it decodes it: each value
// is read where it starts, its end found by reading it, and a value the
// chunk does not keep is checked (validValueEnd) and skipped. Bytes that
// are not JSON are errJSON, wherever they are, as json.Valid would have
// them; a value of the wrong type, or a key given twice or in another
// case, is reported as the decoder it replaced reported it, in the same
// order (FuzzChatChunkDecoders), unless bytes that are not JSON follow
// it: the pass stops at the first error, and the rest of the chunk is
// checked then.
func decodeChatChunkAfter(data []byte, c *chatChunk, prev *chatChunk) error {
	err := decodeChatChunkOnce(data, c, prev)
	if err != nil && err != errJSON && !validJSON(data) {
		return errJSON
	}
	return err
}

// decodeChatChunkOnce is decodeChatChunkAfter but for the check, after a
// wrong value, of the bytes that follow it. errJSON itself reports bytes
// that are not JSON.
func decodeChatChunkOnce(data []byte, c *chatChunk, prev *chatChunk) error {
	i := skipSpace(data, 0)
	if i < len(data) && data[i] == 'n' {
		if end := literal(data, i, "null"); end < 0 || skipSpace(data, end) != len(data) {
			return errJSON
		}
		return nil
	}
	m, err := openMembers(data, i, 0)
	if err != nil {
		return err
	}
	if prev == nil {
		prev = &chatChunk{}
	}
	var s seen
	for m.next() {
		f := m.field("id", "created", "model", "system_fingerprint", "service_tier", "choices", "usage", "error")
		if f >= 0 {
			if err := m.mark(&s, f); err != nil {
				return err
			}
		}
		var sp span
		if f == 5 {
			c.Choices, sp.end, err = decodeObjectsAt(data, m.v, m.open, c.one[:], chatChoiceMember)
		} else {
			sp, err = m.value()
		}
		if err != nil {
			return err
		}
		switch f {
		case 0:
			err = decodeShared(data, sp, &c.ID, prev.ID)
		case 1:
			c.Created = raw(data, sp)
		case 2:
			err = decodeShared(data, sp, &c.Model, prev.Model)
		case 3:
			c.SystemFingerprint, err = decodeOptShared(data, sp, &c.fingerprint, prev.SystemFingerprint)
		case 4:
			c.ServiceTier, err = decodeOptShared(data, sp, &c.serviceTier, prev.ServiceTier)
		case 6:
			c.Usage = raw(data, sp)
		case 7:
			c.Error = raw(data, sp)
		}
		if err != nil {
			return err
		}
		m.end(sp.end)
	}
	if m.err == nil && skipSpace(data, m.stop) != len(data) {
		return errJSON
	}
	return m.err
}

// decodeShared is decodeString, but a string spelled as like, without
// escapes, is like itself rather than a copy.
func decodeShared(b []byte, sp span, dst *string, like string) error {
	if q := raw(b, sp); len(q) == len(like)+2 && q[0] == '"' && string(q[1:len(q)-1]) == like && !needsDecoding(q[1:len(q)-1]) {
		*dst = like
		return nil
	}
	return decodeString(b, sp, dst)
}

// decodeOptShared decodes the string at sp into store, sharing like's
// string (when like is not nil) as decodeShared does: nil for null, else
// store.
func decodeOptShared(b []byte, sp span, store *string, like *string) (*string, error) {
	if kind(b, sp) == 'n' {
		return nil, nil
	}
	l := ""
	if like != nil {
		l = *like
	}
	if err := decodeShared(b, sp, store, l); err != nil {
		return nil, err
	}
	return store, nil
}

// decodeOptIn decodes the string at sp into store: nil for null, else store.
func decodeOptIn(b []byte, sp span, store *string) (*string, error) {
	if kind(b, sp) == 'n' {
		return nil, nil
	}
	if err := decodeString(b, sp, store); err != nil {
		return nil, err
	}
	return store, nil
}

// members walks the members of an object in place and once, checking
// the bytes as it goes: next reads a member's key and finds where its
// value starts; the caller reads the value (value, or a reader of its own
// that descends into it) and gives its end back (end) before the next. A
// reader that descends reads each byte once, where the walk over spans
// (memberIter) found a value's end before reading it, so that the bytes
// of a value n levels deep were read n times. Bytes that are not JSON
// are errJSON (m.err); a value of the wrong type is a reader's error.
type members struct {
	b      []byte
	open   int  // the objects and arrays open, this one included
	at     int  // the next member's key; -1 after the last
	stop   int  // the object's end, once the last member is read
	k      span // the member's key, with its quotes
	v      int  // where the member's value starts
	err    error
	name   string // the name the key matched (field)
	folded bool   // it matched only without regard to case
}

// openMembers returns the walk over the members of the object that
// starts at b[i], inside open objects and arrays.
func openMembers(b []byte, i, open int) (members, error) {
	if i >= len(b) || b[i] != '{' {
		return members{}, fmt.Errorf("%w: want an object", errJSON)
	}
	if open >= maxNesting {
		return members{}, errJSON
	}
	m := members{b: b, open: open + 1, at: skipSpace(b, i+1)}
	if m.at < len(b) && b[m.at] == '}' {
		m.at, m.stop = -1, m.at+1
	}
	return m, nil
}

// next moves to the next member; false after the last or at an error
// (m.err).
func (m *members) next() bool {
	if m.at < 0 || m.err != nil {
		return false
	}
	if m.at >= len(m.b) || m.b[m.at] != '"' {
		m.err = errJSON
		return false
	}
	kEnd := validString(m.b, m.at)
	if kEnd < 0 {
		m.err = errJSON
		return false
	}
	c := skipSpace(m.b, kEnd)
	if c >= len(m.b) || m.b[c] != ':' {
		m.err = errJSON
		return false
	}
	m.k, m.v = span{m.at, kEnd}, skipSpace(m.b, c+1)
	return true
}

// value is the span of the member's value, checked, for a reader that
// does not descend into it.
func (m *members) value() (span, error) {
	end := validValueEnd(m.b, m.v, m.open)
	if end < 0 {
		return span{}, errJSON
	}
	return span{m.v, end}, nil
}

// end moves past the member's value, which ends at end.
func (m *members) end(end int) {
	j := skipSpace(m.b, end)
	switch {
	case j >= len(m.b):
		m.err = errJSON
	case m.b[j] == ',':
		m.at = skipSpace(m.b, j+1)
	case m.b[j] == '}':
		m.at, m.stop = -1, j+1
	default:
		m.err = errJSON
	}
}

// field is the index in names (protocol keys: lowercase ASCII, no two
// alike) of the one the member's key matches as memberIter.is matches
// them in turn: exactly, else without regard to case (folded, then); -1
// for none. A key spelled as a name is that name (no other can match it
// without regard to case); a key of ASCII without capitals, backslashes
// or quotes spelled as none matches none.
func (m *members) field(names ...string) int {
	q := raw(m.b, m.k)
	in := q[1 : len(q)-1]
	for i, n := range names {
		if string(in) == n {
			m.name, m.folded = n, false
			return i
		}
	}
	if lowerPlain(in) {
		return -1
	}
	for i, n := range names {
		if km, _ := matchKey(q, n, true); km != keyOther {
			m.name, m.folded = n, km == keyFolded
			return i
		}
	}
	return -1
}

// lowerPlain reports whether s is ASCII without capitals, backslashes or
// quotes: as a key, it matches a lowercase name only when spelled alike.
func lowerPlain(s []byte) bool {
	for _, c := range s {
		if c >= utf8.RuneSelf || c == '\\' || c == '"' || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// mark is seen.mark of the field the member's key matched.
func (m *members) mark(s *seen, field int) error {
	if m.folded {
		return keyCase(m.name)
	}
	if *s&(1<<field) != 0 {
		return duplicateKey(m.name)
	}
	*s |= 1 << field
	return nil
}

// decodeObjectsAt decodes the array (or null: nil) that starts at b[i],
// inside open objects and arrays, into in, the storage of the usual
// number of elements (zero values), and returns the array's end: each
// element an object whose members member reads (marking the fields it
// sets in the seen it is given and returns, and returning the member's
// end), or null (the zero value). An array of more elements than in holds
// is decoded into a slice of its own, counted first. Each element is
// decoded where it stays, so that what it points into itself stays
// valid. The walk and the marks are passed by value so that neither
// escapes.
func decodeObjectsAt[T any](b []byte, i, open int, in []T, member func(m members, s seen, t *T) (seen, int, error)) ([]T, int, error) {
	return decodeObjectsIn(b, i, open, in, member, false)
}

// decodeObjectsIn is decodeObjectsAt; counted says that in was made for
// the elements counted, so that there can be no more.
func decodeObjectsIn[T any](b []byte, i, open int, in []T, member func(m members, s seen, t *T) (seen, int, error), counted bool) ([]T, int, error) {
	switch {
	case i >= len(b):
		return nil, 0, errJSON
	case b[i] == 'n':
		end := literal(b, i, "null")
		if end < 0 {
			return nil, 0, errJSON
		}
		return nil, end, nil
	case b[i] != '[':
		return nil, 0, fmt.Errorf("%w: want an array", errJSON)
	case open >= maxNesting:
		return nil, 0, errJSON
	}
	out := in[:0]
	j := skipSpace(b, i+1)
	if j < len(b) && b[j] == ']' {
		return out, j + 1, nil
	}
	for {
		if len(out) == len(in) {
			n := countElems(b, i, open)
			if n < 0 || counted {
				return nil, 0, errJSON
			}
			return decodeObjectsIn(b, i, open, make([]T, n), member, true)
		}
		out = out[:len(out)+1]
		end, err := decodeObjectAt(b, j, open+1, &out[len(out)-1], member)
		if err != nil {
			return nil, 0, err
		}
		k := skipSpace(b, end)
		switch {
		case k >= len(b):
			return nil, 0, errJSON
		case b[k] == ']':
			return out, k + 1, nil
		case b[k] != ',':
			return nil, 0, errJSON
		}
		j = skipSpace(b, k+1)
	}
}

// decodeObjectAt decodes the object (or null) that starts at b[i], inside
// open objects and arrays, into t, its members read by member, and
// returns its end.
func decodeObjectAt[T any](b []byte, i, open int, t *T, member func(m members, s seen, t *T) (seen, int, error)) (int, error) {
	if i < len(b) && b[i] == 'n' {
		if end := literal(b, i, "null"); end >= 0 {
			return end, nil
		}
		return 0, errJSON
	}
	m, err := openMembers(b, i, open)
	if err != nil {
		return 0, err
	}
	var s seen
	for m.next() {
		var end int
		if s, end, err = member(m, s, t); err != nil {
			return 0, err
		}
		m.end(end)
	}
	return m.stop, m.err
}

// countElems counts the elements of the array that starts at b[i],
// inside open objects and arrays: -1 when it is not JSON.
func countElems(b []byte, i, open int) int {
	j := skipSpace(b, i+1)
	if j < len(b) && b[j] == ']' {
		return 0
	}
	for n := 1; ; n++ {
		end := validValueEnd(b, j, open+1)
		if end < 0 {
			return -1
		}
		k := skipSpace(b, end)
		switch {
		case k >= len(b) || b[k] != ']' && b[k] != ',':
			return -1
		case b[k] == ']':
			return n
		}
		j = skipSpace(b, k+1)
	}
}

func chatChoiceMember(m members, s seen, ch *chatChoice) (seen, int, error) {
	f := m.field("index", "delta", "finish_reason")
	if f >= 0 {
		if err := m.mark(&s, f); err != nil {
			return s, 0, err
		}
	}
	if f == 1 {
		end, err := decodeChatDeltaAt(m.b, m.v, m.open, &ch.Delta)
		return s, end, err
	}
	sp, err := m.value()
	if err != nil {
		return s, 0, err
	}
	switch f {
	case 0:
		err = decodeInt(m.b, sp, &ch.Index)
	case 2:
		if r := chatFinishReason(raw(m.b, sp)); r != "" {
			ch.finish, ch.FinishReason = r, &ch.finish
			break
		}
		ch.FinishReason, err = decodeOptIn(m.b, sp, &ch.finish)
	}
	return s, sp.end, err
}

// chatFinishReason is the finish reason q spells, quoted and without
// escapes, when it is one of those the API sends: the string a chunk
// shares rather than copies. "" for any other.
func chatFinishReason(q []byte) string {
	switch string(q) {
	case `"stop"`:
		return "stop"
	case `"tool_calls"`:
		return "tool_calls"
	case `"length"`:
		return "length"
	case `"content_filter"`:
		return "content_filter"
	case `"function_call"`:
		return "function_call"
	}
	return ""
}

// decodeChatDeltaAt decodes the delta (or null) that starts at b[i],
// inside open objects and arrays, into d and returns its end.
func decodeChatDeltaAt(b []byte, i, open int, d *chatDelta) (int, error) {
	if i < len(b) && b[i] == 'n' {
		if end := literal(b, i, "null"); end >= 0 {
			return end, nil
		}
		return 0, errJSON
	}
	m, err := openMembers(b, i, open)
	if err != nil {
		return 0, err
	}
	var s seen
	for m.next() {
		f := m.field("role", "content", "refusal", "tool_calls", "function_call")
		if f >= 0 {
			if err := m.mark(&s, f); err != nil {
				return 0, err
			}
		}
		var sp span
		if f == 3 {
			sp.start = m.v
			d.ToolCalls, sp.end, err = decodeObjectsAt(b, m.v, m.open, d.oneCall[:], chatToolCallMember)
		} else {
			sp, err = m.value()
		}
		if err != nil {
			return 0, err
		}
		switch f {
		case 0:
			err = decodeShared(b, sp, &d.Role, "assistant")
		case 1:
			d.Content, err = decodeOptIn(b, sp, &d.content)
		case 2:
			d.Refusal, err = decodeOptIn(b, sp, &d.refusal)
		case 4:
			d.FunctionCall = raw(b, sp)
		}
		if err != nil {
			return 0, err
		}
		if !d.more {
			// As chatDeltaOpening reads the member.
			role, err := keyIs(raw(b, m.k), "role")
			v := raw(b, sp)
			d.more = err != nil || (!role && string(v) != `""` && string(v) != "null")
		}
		m.end(sp.end)
	}
	return m.stop, m.err
}

func chatToolCallMember(m members, s seen, tc *chatToolCallDelta) (seen, int, error) {
	f := m.field("index", "id", "type", "function", "custom")
	if f >= 0 {
		if err := m.mark(&s, f); err != nil {
			return s, 0, err
		}
	}
	b := m.b
	if (f == 3 || f == 4) && m.v < len(b) && b[m.v] != 'n' {
		var end int
		var err error
		if f == 3 {
			end, err = decodeChatFunctionAt(b, m.v, m.open, "arguments", &tc.Function.Name, &tc.Function.Arguments)
		} else {
			end, err = decodeChatFunctionAt(b, m.v, m.open, "input", &tc.Custom.Name, &tc.Custom.Input)
		}
		return s, end, err
	}
	sp, err := m.value()
	if err != nil {
		return s, 0, err
	}
	switch f {
	case 0:
		if kind(b, sp) != 'n' {
			if err = decodeInt(b, sp, &tc.index); err == nil {
				tc.Index = &tc.index
			}
		}
	case 1:
		err = decodeString(b, sp, &tc.ID)
	case 2:
		err = decodeShared(b, sp, &tc.Type, "function")
	}
	return s, sp.end, err
}

// decodeChatFunctionAt decodes the function part (name, arguments) or the
// custom tool call's part (name, input) that starts at b[i], inside open
// objects and arrays: the member name and the member body. It returns the
// part's end.
func decodeChatFunctionAt(b []byte, i, open int, body string, name, args *string) (int, error) {
	m, err := openMembers(b, i, open)
	if err != nil {
		return 0, err
	}
	var s seen
	for m.next() {
		f := m.field("name", body)
		if f >= 0 {
			if err := m.mark(&s, f); err != nil {
				return 0, err
			}
		}
		sp, err := m.value()
		if err != nil {
			return 0, err
		}
		switch f {
		case 0:
			err = decodeString(b, sp, name)
		case 1:
			err = decodeString(b, sp, args)
		}
		if err != nil {
			return 0, err
		}
		m.end(sp.end)
	}
	return m.stop, m.err
}
