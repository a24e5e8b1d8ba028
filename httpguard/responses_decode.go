package httpguard

// The hand decoder of a Responses stream event (responsesEvent).
// stream_decode.go says why stream events are decoded by hand, and
// holds the parts every decoder shares.

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
