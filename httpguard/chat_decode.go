package httpguard

import "fmt"

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
func decodeChatChunkAfter(data []byte, c *chatChunk, prev *chatChunk) error {
	if !validJSON(data) {
		return errJSON
	}
	r, err := root(data)
	if err != nil {
		return err
	}
	if kind(data, r) == 'n' {
		return nil
	}
	it, err := iterMembers(data, r)
	if err != nil {
		return err
	}
	if prev == nil {
		prev = &chatChunk{}
	}
	var s seen
	for it.next() {
		v := it.v
		switch {
		case it.is("id"):
			err = s.mark(&it, 0)
			if err == nil {
				err = decodeShared(data, v, &c.ID, prev.ID)
			}
		case it.is("created"):
			err = s.mark(&it, 1)
			c.Created = raw(data, v)
		case it.is("model"):
			err = s.mark(&it, 2)
			if err == nil {
				err = decodeShared(data, v, &c.Model, prev.Model)
			}
		case it.is("system_fingerprint"):
			err = s.mark(&it, 3)
			if err == nil {
				c.SystemFingerprint, err = decodeOptShared(data, v, &c.fingerprint, prev.SystemFingerprint)
			}
		case it.is("service_tier"):
			err = s.mark(&it, 4)
			if err == nil {
				c.ServiceTier, err = decodeOptShared(data, v, &c.serviceTier, prev.ServiceTier)
			}
		case it.is("choices"):
			err = s.mark(&it, 5)
			if err == nil {
				c.Choices, err = decodeObjectsIn(data, v, c.one[:], chatChoiceMember)
			}
		case it.is("usage"):
			err = s.mark(&it, 6)
			c.Usage = raw(data, v)
		case it.is("error"):
			err = s.mark(&it, 7)
			c.Error = raw(data, v)
		}
		if err != nil {
			return err
		}
	}
	return it.err
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

// decodeObjectsIn is decodeObjects into in, the storage of the usual
// number of elements (zero values): an array of more is decoded by
// decodeObjects into a slice of its own. Each element is decoded where it
// stays, so that what it points into itself stays valid.
func decodeObjectsIn[T any](b []byte, sp span, in []T, member func(b []byte, it memberIter, s seen, t *T) (seen, error)) ([]T, error) {
	if kind(b, sp) == 'n' {
		return nil, nil
	}
	el, err := iterElems(b, sp)
	if err != nil {
		return nil, err
	}
	out := in[:0]
	for el.next() {
		if len(out) == len(in) {
			return decodeObjects(b, sp, member)
		}
		out = out[:len(out)+1]
		e := el.e
		if kind(b, e) == 'n' {
			continue
		}
		it, err := iterMembers(b, e)
		if err != nil {
			return nil, err
		}
		var s seen
		for it.next() {
			if s, err = member(b, it, s, &out[len(out)-1]); err != nil {
				return nil, err
			}
		}
		if it.err != nil {
			return nil, it.err
		}
	}
	return out, el.err
}

// elemIter walks the elements of an array in place, as arrayElems lists
// them, allocating nothing.
type elemIter struct {
	b   []byte
	end int
	at  int // the next element; -1 after the last
	e   span
	err error
}

// iterElems returns an iterator over the array at sp.
func iterElems(b []byte, sp span) (elemIter, error) {
	if kind(b, sp) != '[' {
		return elemIter{}, fmt.Errorf("%w: want an array", errJSON)
	}
	i := skipSpace(b, sp.start+1)
	if i < sp.end && b[i] == ']' {
		i = -1
	}
	return elemIter{b: b, end: sp.end, at: i}, nil
}

// next moves to the next element; false after the last or at an error
// (it.err).
func (it *elemIter) next() bool {
	if it.at < 0 || it.err != nil {
		return false
	}
	if it.at >= it.end {
		it.err = errJSON
		return false
	}
	end, err := valueEnd(it.b, it.at)
	if err != nil {
		it.err = err
		return false
	}
	it.e = span{it.at, end}
	j := skipSpace(it.b, end)
	switch {
	case j >= it.end:
		it.err = errJSON
	case it.b[j] == ']':
		it.at = -1
	case it.b[j] == ',':
		it.at = skipSpace(it.b, j+1)
	default:
		it.err = errJSON
	}
	return it.err == nil
}

func chatChoiceMember(b []byte, it memberIter, s seen, ch *chatChoice) (_ seen, err error) {
	v := it.v
	switch {
	case it.is("index"):
		err = s.mark(&it, 0)
		if err == nil {
			err = decodeInt(b, v, &ch.Index)
		}
	case it.is("delta"):
		err = s.mark(&it, 1)
		if err == nil {
			err = decodeChatDelta(b, v, &ch.Delta)
		}
	case it.is("finish_reason"):
		err = s.mark(&it, 2)
		if err == nil {
			ch.FinishReason, err = decodeOptIn(b, v, &ch.finish)
		}
	}
	return s, err
}

func decodeChatDelta(b []byte, sp span, d *chatDelta) error {
	if kind(b, sp) == 'n' {
		return nil
	}
	it, err := iterMembers(b, sp)
	if err != nil {
		return err
	}
	var s seen
	for it.next() {
		v := it.v
		switch {
		case it.is("role"):
			err = s.mark(&it, 0)
			if err == nil {
				err = decodeShared(b, v, &d.Role, "assistant")
			}
		case it.is("content"):
			err = s.mark(&it, 1)
			if err == nil {
				d.Content, err = decodeOptIn(b, v, &d.content)
			}
		case it.is("refusal"):
			err = s.mark(&it, 2)
			if err == nil {
				d.Refusal, err = decodeOptIn(b, v, &d.refusal)
			}
		case it.is("tool_calls"):
			err = s.mark(&it, 3)
			if err == nil {
				d.ToolCalls, err = decodeObjectsIn(b, v, d.oneCall[:], chatToolCallMember)
			}
		case it.is("function_call"):
			err = s.mark(&it, 4)
			d.FunctionCall = raw(b, v)
		}
		if err != nil {
			return err
		}
		if !d.more {
			// As chatDeltaOpening reads the member.
			role, err := keyIs(raw(b, it.k), "role")
			v := raw(b, v)
			d.more = err != nil || (!role && string(v) != `""` && string(v) != "null")
		}
	}
	return it.err
}

func chatToolCallMember(b []byte, it memberIter, s seen, tc *chatToolCallDelta) (_ seen, err error) {
	v := it.v
	switch {
	case it.is("index"):
		err = s.mark(&it, 0)
		if err == nil && kind(b, v) != 'n' {
			if err = decodeInt(b, v, &tc.index); err == nil {
				tc.Index = &tc.index
			}
		}
	case it.is("id"):
		err = s.mark(&it, 1)
		if err == nil {
			err = decodeString(b, v, &tc.ID)
		}
	case it.is("type"):
		err = s.mark(&it, 2)
		if err == nil {
			err = decodeShared(b, v, &tc.Type, "function")
		}
	case it.is("function"):
		err = s.mark(&it, 3)
		if err == nil && kind(b, v) != 'n' {
			err = decodeChatFunction(b, v, "arguments", &tc.Function.Name, &tc.Function.Arguments)
		}
	case it.is("custom"):
		err = s.mark(&it, 4)
		if err == nil && kind(b, v) != 'n' {
			err = decodeChatFunction(b, v, "input", &tc.Custom.Name, &tc.Custom.Input)
		}
	}
	return s, err
}

// decodeChatFunction decodes a function part (name, arguments) or a custom
// tool call's part (name, input): the member name and the member body.
func decodeChatFunction(b []byte, sp span, body string, name, args *string) error {
	it, err := iterMembers(b, sp)
	if err != nil {
		return err
	}
	var s seen
	for it.next() {
		switch {
		case it.is("name"):
			err = s.mark(&it, 0)
			if err == nil {
				err = decodeString(b, it.v, name)
			}
		case it.is(body):
			err = s.mark(&it, 1)
			if err == nil {
				err = decodeString(b, it.v, args)
			}
		}
		if err != nil {
			return err
		}
	}
	return it.err
}
