package httpguard

// decodeResponsesEventChecked is the Responses event decoder as it was
// before decodeResponsesEventAt read an event in one pass: the whole event
// checked as JSON (decodeObject), then its members walked. It is the
// oracle FuzzResponsesEventDecode holds the one-pass decoder to.
func decodeResponsesEventChecked(data []byte, e *responsesEvent, idx *int) error {
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
				err = decodeResponsesType(data, v, &e.Type)
			}
		case it.is("response"):
			err = s.mark(&it, 1)
			e.Response = raw(data, v)
		case it.is("output_index"):
			err = s.mark(&it, 2)
			if err == nil && kind(data, v) != 'n' {
				n := 0
				if err = decodeInt(data, v, &n); err == nil {
					if idx == nil {
						idx = new(int)
					}
					*idx = n
					e.OutputIndex = idx
				}
			}
		case it.is("item"):
			err = s.mark(&it, 3)
			e.Item = raw(data, v)
		case it.is("delta"):
			err = s.mark(&it, 4)
			e.Delta = raw(data, v)
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
