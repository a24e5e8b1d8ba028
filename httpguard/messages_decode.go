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
