package httpguard

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Hand decoders of stream events: every event of a stream goes through
// one, and encoding/json's reflection costs several times the scan. Each
// decodes as encoding/json would into the parsed event's struct (null
// leaving a field unset, a value of another type an error), with keys read
// by the rule of keys.go: a key it reads is spelled exactly, once, or the
// event is unguardable (where encoding/json would read a key in another
// case, or the last of two).

// seen marks the fields of one object already read.
type seen uint16

// mark marks field, which the iterator's member matched: a key that
// matched only without regard to case, or a field read twice, is an
// unguardable error.
func (s *seen) mark(it *memberIter, field int) error {
	if it.folded {
		return keyCase(it.name)
	}
	if *s&(1<<field) != 0 {
		return duplicateKey(it.name)
	}
	*s |= 1 << field
	return nil
}

// decodeChatChunk decodes data into c.
func decodeChatChunk(data []byte, c *chatChunk) error {
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
	var s seen
	for it.next() {
		v := it.v
		switch {
		case it.is("id"):
			err = s.mark(&it, 0)
			if err == nil {
				err = decodeString(data, v, &c.ID)
			}
		case it.is("created"):
			err = s.mark(&it, 1)
			c.Created = raw(data, v)
		case it.is("model"):
			err = s.mark(&it, 2)
			if err == nil {
				err = decodeString(data, v, &c.Model)
			}
		case it.is("system_fingerprint"):
			err = s.mark(&it, 3)
			if err == nil {
				c.SystemFingerprint, err = decodeOptString(data, v)
			}
		case it.is("service_tier"):
			err = s.mark(&it, 4)
			if err == nil {
				c.ServiceTier, err = decodeOptString(data, v)
			}
		case it.is("choices"):
			err = s.mark(&it, 5)
			if err == nil {
				c.Choices, err = decodeChatChoices(data, v)
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

func decodeChatChoices(b []byte, sp span) ([]chatChoice, error) {
	return decodeObjects(b, sp, chatChoiceMember)
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
			ch.FinishReason, err = decodeOptString(b, v)
		}
	}
	return s, err
}

// decodeObjects decodes the JSON array at sp (null: nil) into a slice, one
// element per object, each member read by member, which marks the fields
// it sets in the seen it is given and returns (a key given twice in one
// object is refused); a null element stays the zero value. The iterator
// and the marks are passed by value so that neither escapes.
func decodeObjects[T any](b []byte, sp span, member func(b []byte, it memberIter, s seen, t *T) (seen, error)) ([]T, error) {
	if kind(b, sp) == 'n' {
		return nil, nil
	}
	es, err := arrayElems(b, sp)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(es))
	for i, e := range es {
		if kind(b, e) == 'n' {
			continue
		}
		it, err := iterMembers(b, e)
		if err != nil {
			return nil, err
		}
		var s seen
		for it.next() {
			if s, err = member(b, it, s, &out[i]); err != nil {
				return nil, err
			}
		}
		if it.err != nil {
			return nil, it.err
		}
	}
	return out, nil
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
				err = decodeString(b, v, &d.Role)
			}
		case it.is("content"):
			err = s.mark(&it, 1)
			if err == nil {
				d.Content, err = decodeOptString(b, v)
			}
		case it.is("refusal"):
			err = s.mark(&it, 2)
			if err == nil {
				d.Refusal, err = decodeOptString(b, v)
			}
		case it.is("tool_calls"):
			err = s.mark(&it, 3)
			if err == nil {
				d.ToolCalls, err = decodeChatToolCalls(b, v)
			}
		case it.is("function_call"):
			err = s.mark(&it, 4)
			d.FunctionCall = raw(b, v)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

func decodeChatToolCalls(b []byte, sp span) ([]chatToolCallDelta, error) {
	return decodeObjects(b, sp, chatToolCallMember)
}

func chatToolCallMember(b []byte, it memberIter, s seen, tc *chatToolCallDelta) (_ seen, err error) {
	v := it.v
	switch {
	case it.is("index"):
		err = s.mark(&it, 0)
		if err == nil && kind(b, v) != 'n' {
			n := 0
			if err = decodeInt(b, v, &n); err == nil {
				tc.Index = &n
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
			err = decodeString(b, v, &tc.Type)
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

// decodeString decodes the string at sp into *dst; null leaves it as it
// is.
func decodeString(b []byte, sp span, dst *string) error {
	switch kind(b, sp) {
	case 'n':
		return nil
	case '"':
		s, err := unquote(raw(b, sp))
		if err != nil {
			return err
		}
		*dst = s
		return nil
	}
	return fmt.Errorf("%w: want a string", errJSON)
}

// decodeOptString decodes the string at sp; nil for null.
func decodeOptString(b []byte, sp span) (*string, error) {
	if kind(b, sp) == 'n' {
		return nil, nil
	}
	var s string
	if err := decodeString(b, sp, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// decodeInt decodes the integer at sp into *dst; null leaves it as it is.
func decodeInt(b []byte, sp span, dst *int) error {
	if kind(b, sp) == 'n' {
		return nil
	}
	n, err := strconv.Atoi(string(raw(b, sp)))
	if err != nil {
		return fmt.Errorf("%w: want an integer", errJSON)
	}
	*dst = n
	return nil
}

// unquote decodes a JSON string: its bytes between the quotes when it has
// no escape, else as encoding/json decodes it.
func unquote(q []byte) (string, error) {
	if len(q) >= 2 && q[0] == '"' && q[len(q)-1] == '"' && !needsDecoding(q[1:len(q)-1]) {
		return string(q[1 : len(q)-1]), nil
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", errJSON
	}
	return s, nil
}

// needsDecoding reports whether the inside of a JSON string has an escape,
// a control byte or a byte that is not ASCII (which encoding/json checks
// as UTF-8, replacing what is not).
func needsDecoding(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c < 0x20 || c >= 0x80 || c == '"' {
			return true
		}
	}
	return false
}

// decodeObject checks that data is one JSON value and returns an iterator
// over its members; ok is false for null (nothing to decode).
func decodeObject(data []byte) (it memberIter, ok bool, err error) {
	if !json.Valid(data) {
		return memberIter{}, false, errJSON
	}
	r, err := root(data)
	if err != nil {
		return memberIter{}, false, err
	}
	if kind(data, r) == 'n' {
		return memberIter{}, false, nil
	}
	it, err = iterMembers(data, r)
	return it, err == nil, err
}

// typeOf is the "type" member of the object at sp when it is a string, ""
// otherwise or when sp is not an object; "type" given twice or in another
// case is an unguardable error.
func typeOf(b []byte, sp span) (string, error) {
	if sp.end <= sp.start || kind(b, sp) != '{' {
		return "", nil
	}
	v, ok, err := field(b, sp, "type")
	if err != nil || !ok || kind(b, v) != '"' {
		return "", err
	}
	return unquote(raw(b, v))
}

// decodeMessagesEvent decodes an Anthropic stream event into e (its
// members; parseMessagesEvent reads the block type and delta).
func decodeMessagesEvent(data []byte, e *messagesEvent) error {
	it, ok, err := decodeObject(data)
	if err != nil || !ok {
		return err
	}
	var s seen
	for it.next() {
		v := it.v
		switch {
		case it.is("type"):
			err = s.mark(&it, 0)
			if err == nil {
				err = decodeString(data, v, &e.Type)
			}
		case it.is("index"):
			err = s.mark(&it, 1)
			if err == nil {
				err = decodeInt(data, v, &e.Index)
			}
		case it.is("message"):
			err = s.mark(&it, 2)
			e.Message = raw(data, v)
		case it.is("content_block"):
			err = s.mark(&it, 3)
			e.ContentBlock = raw(data, v)
		case it.is("delta"):
			err = s.mark(&it, 4)
			e.Delta = raw(data, v)
		case it.is("usage"):
			err = s.mark(&it, 5)
			e.Usage = raw(data, v)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

// decodeMessagesDelta decodes a content_block_delta's delta.
func decodeMessagesDelta(data []byte, d *messagesDelta) error {
	if len(data) == 0 {
		return errJSON // as encoding/json refuses no input
	}
	it, ok, err := decodeObject(data)
	if err != nil || !ok {
		return err
	}
	var s seen
	for it.next() {
		v := it.v
		switch {
		case it.is("type"):
			err = s.mark(&it, 0)
			if err == nil {
				err = decodeString(data, v, &d.Type)
			}
		case it.is("text"):
			err = s.mark(&it, 1)
			if err == nil {
				err = decodeString(data, v, &d.Text)
			}
		case it.is("thinking"):
			err = s.mark(&it, 2)
			if err == nil {
				err = decodeString(data, v, &d.Thinking)
			}
		case it.is("signature"):
			err = s.mark(&it, 3)
			if err == nil {
				err = decodeString(data, v, &d.Signature)
			}
		case it.is("partial_json"):
			err = s.mark(&it, 4)
			if err == nil {
				err = decodeString(data, v, &d.PartialJSON)
			}
		case it.is("citation"):
			err = s.mark(&it, 5)
			d.Citation = raw(data, v)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

// decodeResponsesEvent decodes a Responses stream event into e (its
// members; parseResponsesEvent reads the item type).
func decodeResponsesEvent(data []byte, e *responsesEvent) error {
	it, ok, err := decodeObject(data)
	if err != nil || !ok {
		return err
	}
	var s seen
	for it.next() {
		v := it.v
		switch {
		case it.is("type"):
			err = s.mark(&it, 0)
			if err == nil {
				err = decodeString(data, v, &e.Type)
			}
		case it.is("response"):
			err = s.mark(&it, 1)
			e.Response = raw(data, v)
		case it.is("output_index"):
			err = s.mark(&it, 2)
			if err == nil && kind(data, v) != 'n' {
				n := 0
				if err = decodeInt(data, v, &n); err == nil {
					e.OutputIndex = &n
				}
			}
		case it.is("item"):
			err = s.mark(&it, 3)
			e.Item = raw(data, v)
		case it.is("delta"):
			err = s.mark(&it, 4)
			if err == nil {
				err = decodeString(data, v, &e.Delta)
			}
		case it.is("sequence_number"):
			err = s.mark(&it, 5)
			e.Seq = raw(data, v)
		}
		if err != nil {
			return err
		}
	}
	return it.err
}
