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
// service_tier, a call's type) are the previous chunk's, not copies.

// decodeChatChunk decodes data into c.
func decodeChatChunk(data []byte, c *chatChunk) error { return decodeChatChunkAfter(data, c, nil) }

// decodeChatChunkAfter decodes data into c, sharing with prev, the
// stream's chunk before (nil for none), the strings spelled alike.
//
// It checks data once (validJSON), then reads it in one descent: each
// value is read where it starts, its end found by reading it, never by
// scanning ahead (valueEnd) and then again inside. A value the chunk does
// not keep is skipped by valueEnd. Reading a document already checked,
// nothing here can meet bytes that are not JSON; what it can meet is a
// value of the wrong type, a key given twice or in another case, which it
// reports as the walk over spans it replaced did, in the same order
// (FuzzChatChunkDecoders).
func decodeChatChunkAfter(data []byte, c *chatChunk, prev *chatChunk) error {
	if !validJSON(data) {
		return errJSON
	}
	i := skipSpace(data, 0)
	if data[i] == 'n' {
		return nil
	}
	m, err := openMembers(data, i)
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
			c.Choices, sp.end, err = decodeObjectsAt(data, m.v, c.one[:], chatChoiceMember)
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

// members walks the members of an object of a document validJSON
// accepted, in place and once: next reads a member's key and finds where
// its value starts; the caller reads the value (value, or a reader of its
// own that descends into it) and gives its end back (end) before the
// next. A reader that descends reads each byte once, where the walk over
// spans (memberIter) found a value's end before reading it, so that the
// bytes of a value n levels deep were read n times.
type members struct {
	b      []byte
	at     int  // the next member's key; -1 after the last
	stop   int  // the object's end, once the last member is read
	k      span // the member's key, with its quotes
	v      int  // where the member's value starts
	err    error
	name   string // the name the key matched (field)
	folded bool   // it matched only without regard to case
}

// openMembers returns the walk over the members of the object that
// starts at b[i].
func openMembers(b []byte, i int) (members, error) {
	if i >= len(b) || b[i] != '{' {
		return members{}, fmt.Errorf("%w: want an object", errJSON)
	}
	m := members{b: b, at: skipSpace(b, i+1)}
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
	kEnd, err := stringEnd(m.b, m.at)
	c := skipSpace(m.b, kEnd)
	if err != nil || c >= len(m.b) || m.b[c] != ':' {
		m.err = errJSON
		return false
	}
	m.k, m.v = span{m.at, kEnd}, skipSpace(m.b, c+1)
	return true
}

// value is the span of the member's value, for a reader that does not
// descend into it.
func (m *members) value() (span, error) {
	end, err := valueEnd(m.b, m.v)
	return span{m.v, end}, err
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

// decodeObjectsAt decodes the array (or null: nil) that starts at b[i]
// into in, the storage of the usual number of elements (zero values), and
// returns the array's end: each element an object whose members member
// reads (marking the fields it sets in the seen it is given and returns,
// and returning the member's end), or null (the zero value). An array of
// more elements than in holds is decoded into a slice of its own, counted
// first. Each element is decoded where it stays, so that what it points
// into itself stays valid. The walk and the marks are passed by value so
// that neither escapes.
func decodeObjectsAt[T any](b []byte, i int, in []T, member func(m members, s seen, t *T) (seen, int, error)) ([]T, int, error) {
	switch {
	case i >= len(b):
		return nil, 0, errJSON
	case b[i] == 'n':
		end, err := valueEnd(b, i)
		return nil, end, err
	case b[i] != '[':
		return nil, 0, fmt.Errorf("%w: want an array", errJSON)
	}
	out := in[:0]
	j := skipSpace(b, i+1)
	if j < len(b) && b[j] == ']' {
		return out, j + 1, nil
	}
	for {
		if len(out) == len(in) {
			n, err := countElems(b, i)
			if err != nil {
				return nil, 0, err
			}
			return decodeObjectsAt(b, i, make([]T, n), member)
		}
		out = out[:len(out)+1]
		end, err := decodeObjectAt(b, j, &out[len(out)-1], member)
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

// decodeObjectAt decodes the object (or null) that starts at b[i] into
// t, its members read by member, and returns its end.
func decodeObjectAt[T any](b []byte, i int, t *T, member func(m members, s seen, t *T) (seen, int, error)) (int, error) {
	if i < len(b) && b[i] == 'n' {
		return valueEnd(b, i)
	}
	m, err := openMembers(b, i)
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

// countElems counts the elements of the array that starts at b[i].
func countElems(b []byte, i int) (int, error) {
	j := skipSpace(b, i+1)
	if j < len(b) && b[j] == ']' {
		return 0, nil
	}
	for n := 1; ; n++ {
		end, err := valueEnd(b, j)
		if err != nil {
			return 0, err
		}
		k := skipSpace(b, end)
		switch {
		case k >= len(b):
			return 0, errJSON
		case b[k] == ']':
			return n, nil
		case b[k] != ',':
			return 0, errJSON
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
		end, err := decodeChatDeltaAt(m.b, m.v, &ch.Delta)
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
		ch.FinishReason, err = decodeOptIn(m.b, sp, &ch.finish)
	}
	return s, sp.end, err
}

// decodeChatDeltaAt decodes the delta (or null) that starts at b[i] into
// d and returns its end.
func decodeChatDeltaAt(b []byte, i int, d *chatDelta) (int, error) {
	if i < len(b) && b[i] == 'n' {
		return valueEnd(b, i)
	}
	m, err := openMembers(b, i)
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
			d.ToolCalls, sp.end, err = decodeObjectsAt(b, m.v, d.oneCall[:], chatToolCallMember)
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
			end, err = decodeChatFunctionAt(b, m.v, "arguments", &tc.Function.Name, &tc.Function.Arguments)
		} else {
			end, err = decodeChatFunctionAt(b, m.v, "input", &tc.Custom.Name, &tc.Custom.Input)
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
// custom tool call's part (name, input) that starts at b[i]: the member
// name and the member body. It returns the part's end.
func decodeChatFunctionAt(b []byte, i int, body string, name, args *string) (int, error) {
	m, err := openMembers(b, i)
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
