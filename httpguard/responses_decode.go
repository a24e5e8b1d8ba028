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
// allocation: responsesEventBox). An object is read in one pass: each
// member's value is checked as JSON (validValueEnd) as its end is found,
// where checking the whole event and then walking it read every byte of
// it three times; an error a member gives is returned once the rest of
// the event is known to be JSON, as when the event was checked first
// (FuzzResponsesEventDecode holds it to that reading).
func decodeResponsesEventAt(data []byte, e *responsesEvent, idx *int) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return decodeResponsesValue(data)
	}
	var (
		s     seen
		first error // the first member's error
	)
	m := openCheckedMembers(data, i)
	for first == nil && m.next() {
		first = decodeResponsesMember(&m.it, &s, e, &idx)
	}
	if !m.ok() {
		return errJSON
	}
	return first
}

// decodeResponsesValue decodes an event that is not an object, as
// decodeObject reads it: null decodes to nothing, anything else is an
// error.
func decodeResponsesValue(data []byte) error {
	_, _, err := decodeObject(data)
	return err
}

// decodeResponsesMember decodes the member it is at into e, marking it in
// s; *idx, when not nil, is the int output_index points to (set to a new
// one when nil and needed).
func decodeResponsesMember(it *memberIter, s *seen, e *responsesEvent, idx **int) error {
	data, v := it.b, it.v
	f := responsesField(it)
	if f < 0 {
		return nil
	}
	if err := s.mark(it, f); err != nil {
		return err
	}
	switch f {
	case 0:
		return decodeResponsesType(data, v, &e.Type)
	case 1:
		e.Response = raw(data, v)
	case 2:
		if kind(data, v) == 'n' {
			return nil
		}
		n := 0
		if err := decodeInt(data, v, &n); err != nil {
			return err
		}
		if *idx == nil {
			*idx = new(int)
		}
		**idx = n
		e.OutputIndex = *idx
	case 3:
		e.Item = raw(data, v)
	case 4:
		e.Delta = raw(data, v)
	case 5:
		e.Seq = raw(data, v)
	}
	return nil
}

// responsesField is the field of responsesEvent the member it is at
// names, as memberIter.is matches it (and noted as is notes it), -1 for
// none: 0 type, 1 response, 2 output_index, 3 item, 4 delta, 5
// sequence_number. A key spelled as one of them is told at once; a key of
// plain ASCII can be another's only in another case, so of the same
// length; any other goes through is.
func responsesField(it *memberIter) int {
	q := raw(it.b, it.k)
	k := q[1 : len(q)-1]
	f, name := -1, ""
	switch string(k) {
	case "type":
		f, name = 0, "type"
	case "response":
		f, name = 1, "response"
	case "output_index":
		f, name = 2, "output_index"
	case "item":
		f, name = 3, "item"
	case "delta":
		f, name = 4, "delta"
	case "sequence_number":
		f, name = 5, "sequence_number"
	}
	if f >= 0 {
		it.name, it.folded = name, false
		return f
	}
	if plainASCII(k) {
		switch len(k) {
		case len("type"), len("response"), len("output_index"), len("delta"), len("sequence_number"):
		default:
			return -1
		}
	}
	switch {
	case it.is("type"):
		return 0
	case it.is("response"):
		return 1
	case it.is("output_index"):
		return 2
	case it.is("item"):
		return 3
	case it.is("delta"):
		return 4
	case it.is("sequence_number"):
		return 5
	}
	return -1
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

// unquotedBytes is the JSON string q decoded, as unquote decodes it: in
// place when unquotedLen says it can, else through unquote.
func unquotedBytes(q []byte) ([]byte, error) {
	n, ok := unquotedLen(q)
	if !ok {
		s, err := unquote(q)
		if err != nil {
			return nil, err
		}
		return []byte(s), nil
	}
	out := make([]byte, 0, n)
	in := q[1 : len(q)-1]
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == '\\' {
			i++
			c = shortEscape(in[i])
		}
		out = append(out, c)
	}
	return out, nil
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
