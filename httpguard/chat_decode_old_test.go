package httpguard

import (
	"encoding/json"
	"fmt"
)

// The Chat chunk decoder as it was at 62e5283 (a validity check by
// json.Valid, then a walk over spans that finds each value's end before
// reading it), kept as the oracle of the one that replaced it:
// FuzzChatChunkDecoders holds the two to the same chunks and errors.

// oldDecodeChatChunkAfter decodes data into c, sharing with prev, the
// stream's chunk before (nil for none), the strings spelled alike.
func oldDecodeChatChunkAfter(data []byte, c *chatChunk, prev *chatChunk) error {
	if !json.Valid(data) {
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
				c.Choices, err = oldDecodeObjectsIn(data, v, c.one[:], oldChatChoiceMember)
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

// oldDecodeObjectsIn is decodeObjects into in, the storage of the usual
// number of elements (zero values): an array of more is decoded by
// decodeObjects into a slice of its own. Each element is decoded where it
// stays, so that what it points into itself stays valid.
func oldDecodeObjectsIn[T any](b []byte, sp span, in []T, member func(b []byte, it memberIter, s seen, t *T) (seen, error)) ([]T, error) {
	if kind(b, sp) == 'n' {
		return nil, nil
	}
	el, err := oldIterElems(b, sp)
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

// oldElemIter walks the elements of an array in place, as arrayElems lists
// them, allocating nothing.
type oldElemIter struct {
	b   []byte
	end int
	at  int // the next element; -1 after the last
	e   span
	err error
}

// oldIterElems returns an iterator over the array at sp.
func oldIterElems(b []byte, sp span) (oldElemIter, error) {
	if kind(b, sp) != '[' {
		return oldElemIter{}, fmt.Errorf("%w: want an array", errJSON)
	}
	i := skipSpace(b, sp.start+1)
	if i < sp.end && b[i] == ']' {
		i = -1
	}
	return oldElemIter{b: b, end: sp.end, at: i}, nil
}

// next moves to the next element; false after the last or at an error
// (it.err).
func (it *oldElemIter) next() bool {
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

func oldChatChoiceMember(b []byte, it memberIter, s seen, ch *chatChoice) (_ seen, err error) {
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
			err = oldDecodeChatDelta(b, v, &ch.Delta)
		}
	case it.is("finish_reason"):
		err = s.mark(&it, 2)
		if err == nil {
			ch.FinishReason, err = decodeOptIn(b, v, &ch.finish)
		}
	}
	return s, err
}

func oldDecodeChatDelta(b []byte, sp span, d *chatDelta) error {
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
				d.ToolCalls, err = oldDecodeObjectsIn(b, v, d.oneCall[:], oldChatToolCallMember)
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

func oldChatToolCallMember(b []byte, it memberIter, s seen, tc *chatToolCallDelta) (_ seen, err error) {
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
			err = oldDecodeChatFunction(b, v, "arguments", &tc.Function.Name, &tc.Function.Arguments)
		}
	case it.is("custom"):
		err = s.mark(&it, 4)
		if err == nil && kind(b, v) != 'n' {
			err = oldDecodeChatFunction(b, v, "input", &tc.Custom.Name, &tc.Custom.Input)
		}
	}
	return s, err
}

// oldDecodeChatFunction decodes a function part (name, arguments) or a custom
// tool call's part (name, input): the member name and the member body.
func oldDecodeChatFunction(b []byte, sp span, body string, name, args *string) error {
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
