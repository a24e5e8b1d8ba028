package httpguard

import "encoding/json"

// The hand decoder of a chat.completion.chunk (chatChunk).
// stream_decode.go says why stream events are decoded by hand, and
// holds the parts every decoder shares.

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
		if !d.more {
			// As chatDeltaOpening reads the member.
			role, err := keyIs(raw(b, it.k), "role")
			v := raw(b, v)
			d.more = err != nil || (!role && string(v) != `""` && string(v) != "null")
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
