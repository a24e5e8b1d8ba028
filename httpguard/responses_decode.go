package httpguard

import "strings"

// The hand decoder of a Responses stream event (responsesEvent).
// stream_decode.go says why stream events are decoded by hand, and
// holds the parts every decoder shares.

// decodeResponsesEvent decodes a Responses stream event into e (its
// members; parseResponsesEvent reads the item type).
func decodeResponsesEvent(data []byte, e *responsesEvent) error {
	return decodeResponsesEventAt(data, e, nil)
}

// decodeResponsesEventAt is decodeResponsesEvent with idx, when not nil,
// the int output_index points to (so that an event and its index are one
// allocation: responsesEventBox).
func decodeResponsesEventAt(data []byte, e *responsesEvent, idx *int) error {
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

// decodeResponsesType decodes the event type at sp into *dst as
// decodeString does, without a copy for a type OpenAI sends.
func decodeResponsesType(b []byte, sp span, dst *string) error {
	if kind(b, sp) == '"' && sp.end-sp.start >= 2 {
		if t, ok := responsesType(b[sp.start+1 : sp.end-1]); ok {
			*dst = t
			return nil
		}
	}
	return decodeString(b, sp, dst)
}

// responsesType returns the type of a Responses event whose bytes
// (between its quotes, or an SSE event field) are b, as a constant when it
// is one OpenAI sends, written without escapes; ok false for another.
func responsesType(b []byte) (string, bool) {
	switch string(b) {
	case "response.created":
		return "response.created", true
	case "response.in_progress":
		return "response.in_progress", true
	case "response.queued":
		return "response.queued", true
	case "response.completed":
		return "response.completed", true
	case "response.incomplete":
		return "response.incomplete", true
	case "response.failed":
		return "response.failed", true
	case "response.output_item.added":
		return "response.output_item.added", true
	case "response.output_item.done":
		return "response.output_item.done", true
	case "response.content_part.added":
		return "response.content_part.added", true
	case "response.content_part.done":
		return "response.content_part.done", true
	case "response.output_text.delta":
		return "response.output_text.delta", true
	case "response.output_text.done":
		return "response.output_text.done", true
	case "response.output_text.annotation.added":
		return "response.output_text.annotation.added", true
	case "response.refusal.delta":
		return "response.refusal.delta", true
	case "response.refusal.done":
		return "response.refusal.done", true
	case "response.function_call_arguments.delta":
		return "response.function_call_arguments.delta", true
	case "response.function_call_arguments.done":
		return "response.function_call_arguments.done", true
	case "response.custom_tool_call_input.delta":
		return "response.custom_tool_call_input.delta", true
	case "response.custom_tool_call_input.done":
		return "response.custom_tool_call_input.done", true
	case "response.reasoning_summary_part.added":
		return "response.reasoning_summary_part.added", true
	case "response.reasoning_summary_part.done":
		return "response.reasoning_summary_part.done", true
	case "response.reasoning_summary_text.delta":
		return "response.reasoning_summary_text.delta", true
	case "response.reasoning_summary_text.done":
		return "response.reasoning_summary_text.done", true
	case "response.reasoning_text.delta":
		return "response.reasoning_text.delta", true
	case "response.reasoning_text.done":
		return "response.reasoning_text.done", true
	case "error":
		return "error", true
	}
	return "", false
}

// responsesItemType is the type of the output item b (as typeOf reads
// it), without a copy for a type the wire code knows.
func responsesItemType(b []byte) (string, error) {
	sp := span{0, len(b)}
	if sp.end <= sp.start || kind(b, sp) != '{' {
		return "", nil
	}
	v, ok, err := field(b, sp, "type")
	if err != nil || !ok || kind(b, v) != '"' {
		return "", err
	}
	q := raw(b, v)
	switch string(q) {
	case `"function_call"`:
		return "function_call", nil
	case `"message"`:
		return "message", nil
	case `"reasoning"`:
		return "reasoning", nil
	case `"custom_tool_call"`:
		return "custom_tool_call", nil
	}
	return unquote(q)
}

// unquotedLen is the length of the JSON string q decoded, and whether it
// has only the escapes appendUnquoted writes in place (a \u escape, a byte
// past ASCII or a control byte makes it false).
func unquotedLen(q []byte) (int, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return 0, false
	}
	in, n := q[1:len(q)-1], 0
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c < 0x20 || c >= 0x80 || c == '"':
			return 0, false
		case c == '\\':
			if i+1 >= len(in) || strings.IndexByte(`"\/bfnrt`, in[i+1]) < 0 {
				return 0, false
			}
			i++
		}
		n++
	}
	return n, true
}

// shortEscape is the byte the escape \c stands for.
func shortEscape(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // '"', '\\', '/'
}

// appendUnquoted writes the JSON string q, decoded, to acc: in place
// when unquotedLen says it can, else through unquote.
func appendUnquoted(acc *strings.Builder, q []byte) error {
	n, ok := unquotedLen(q)
	if !ok {
		s, err := unquote(q)
		if err != nil {
			return err
		}
		acc.WriteString(s)
		return nil
	}
	acc.Grow(n)
	in := q[1 : len(q)-1]
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == '\\' {
			i++
			c = shortEscape(in[i])
		}
		acc.WriteByte(c)
	}
	return nil
}

// jsonStringIs reports whether the JSON string q decodes to s.
func jsonStringIs(q []byte, s string) bool {
	n, ok := unquotedLen(q)
	if !ok {
		d, err := unquote(q)
		return err == nil && d == s
	}
	if n != len(s) {
		return false
	}
	in, j := q[1:len(q)-1], 0
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == '\\' {
			i++
			c = shortEscape(in[i])
		}
		if s[j] != c {
			return false
		}
		j++
	}
	return true
}
