package httpguard

// The hand decoder of a ConverseStream event (bedrockEvent).
// stream_decode.go says why stream events are decoded by hand, and
// holds the parts every decoder shares.

// decodeBedrockEvent decodes a ConverseStream event's payload into e as
// encoding/json decodes it into a bedrockEvent, and records in e.others
// the kind of a start or delta member it does not read (an image, a
// citation, a tool result: a member that is not null). The pointers it
// sets point into e.own, so that an event is one allocation.
func decodeBedrockEvent(data []byte, e *bedrockEvent) error {
	it, ok, err := decodeObject(data)
	if err != nil || !ok {
		return err
	}
	var s seen
	var startOthers, deltaOthers string
	for it.next() {
		v := it.v
		switch {
		case it.is("contentBlockIndex"):
			err = s.mark(&it, 0)
			if err == nil && kind(data, v) != 'n' {
				if err = decodeInt(data, v, &e.own.index); err == nil {
					e.Index = &e.own.index
				}
			}
		case it.is("start"):
			err = s.mark(&it, 1)
			if err == nil && kind(data, v) != 'n' {
				e.Start = &e.own.start
				startOthers, err = decodeBedrockStart(data, v, e)
			}
		case it.is("delta"):
			err = s.mark(&it, 2)
			if err == nil && kind(data, v) != 'n' {
				e.Delta = &e.own.delta
				deltaOthers, err = decodeBedrockDelta(data, v, e)
			}
		}
		if err != nil {
			return err
		}
	}
	e.others = startOthers
	if deltaOthers != "" {
		e.others = deltaOthers
	}
	return it.err
}

// decodeBedrockStart decodes the start at sp into e.own.start; others is
// the last of its members not null that it does not read (text and
// reasoningContent aside, which only a delta carries).
func decodeBedrockStart(b []byte, sp span, e *bedrockEvent) (others string, err error) {
	it, err := iterMembers(b, sp)
	if err != nil {
		return "", err
	}
	var s seen
	for it.next() {
		if it.is("toolUse") {
			if err := s.mark(&it, 0); err != nil {
				return "", err
			}
			e.own.start.ToolUse = raw(b, it.v)
			continue
		}
		if k, err := otherKey(b, it); err != nil {
			return "", err
		} else if k != "" && k != "text" && k != "reasoningContent" {
			others = k
		}
	}
	return others, it.err
}

// decodeBedrockDelta decodes the delta at sp into e.own.delta; others is
// the last of its members not null that it does not read.
func decodeBedrockDelta(b []byte, sp span, e *bedrockEvent) (others string, err error) {
	it, err := iterMembers(b, sp)
	if err != nil {
		return "", err
	}
	d := &e.own.delta
	var s seen
	for it.next() {
		v := it.v
		switch {
		case it.is("text"):
			err = s.mark(&it, 0)
			if err == nil {
				d.Text, err = decodeOptStringInto(b, v, &e.own.text)
			}
		case it.is("toolUse"):
			err = s.mark(&it, 1)
			if err == nil && kind(b, v) != 'n' {
				d.ToolUse = &e.own.toolUse
				err = decodeBedrockToolUseDelta(b, v, d.ToolUse)
			}
		case it.is("reasoningContent"):
			err = s.mark(&it, 2)
			if err == nil && kind(b, v) != 'n' {
				d.Reasoning = &e.own.reasoning
				err = decodeBedrockReasoningDelta(b, v, e)
			}
		default:
			var k string
			if k, err = otherKey(b, it); k != "" {
				others = k
			}
		}
		if err != nil {
			return "", err
		}
	}
	return others, it.err
}

func decodeBedrockToolUseDelta(b []byte, sp span, t *bedrockToolUseDelta) error {
	it, err := iterMembers(b, sp)
	if err != nil {
		return err
	}
	var s seen
	for it.next() {
		if it.is("input") {
			if err := s.mark(&it, 0); err != nil {
				return err
			}
			if err := decodeString(b, it.v, &t.Input); err != nil {
				return err
			}
		}
	}
	return it.err
}

func decodeBedrockReasoningDelta(b []byte, sp span, e *bedrockEvent) error {
	it, err := iterMembers(b, sp)
	if err != nil {
		return err
	}
	r := &e.own.reasoning
	var s seen
	for it.next() {
		v := it.v
		switch {
		case it.is("text"):
			err = s.mark(&it, 0)
			if err == nil {
				r.Text, err = decodeOptStringInto(b, v, &e.own.reasoningText)
			}
		case it.is("signature"):
			err = s.mark(&it, 1)
			if err == nil {
				r.Signature, err = decodeOptStringInto(b, v, &e.own.signature)
			}
		case it.is("redactedContent"):
			err = s.mark(&it, 2)
			if err == nil {
				r.Redacted, err = decodeOptStringInto(b, v, &e.own.redacted)
			}
		}
		if err != nil {
			return err
		}
	}
	return it.err
}

// decodeOptStringInto decodes the string at sp into *dst and returns dst;
// nil for null.
func decodeOptStringInto(b []byte, sp span, dst *string) (*string, error) {
	if kind(b, sp) == 'n' {
		return nil, nil
	}
	if err := decodeString(b, sp, dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// otherKey is the key of the iterator's member, decoded, when its value
// is not null; "" when it is.
func otherKey(b []byte, it memberIter) (string, error) {
	if kind(b, it.v) == 'n' {
		return "", nil
	}
	return unquote(raw(b, it.k))
}
