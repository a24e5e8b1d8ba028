package httpguard

// The hand decoder of an Anthropic stream event (messagesEvent).
// stream_decode.go says why stream events are decoded by hand, and
// holds the parts every decoder shares.

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
				err = decodeMessagesType(data, v, &e.Type)
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
				err = decodeMessagesType(data, v, &d.Type)
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
