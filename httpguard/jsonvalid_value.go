package httpguard

// validValueEnd returns the end of the JSON value that starts at b[i], -1
// when what starts there is not one: validJSON's grammar (the same
// strings, numbers and literals, checked by the same helpers), for a value
// inside depth open containers, so that at most maxNesting are open in
// all. A decoder that walks an object's members checks each value with it
// as it finds the value's end: one pass over the bytes where validJSON
// and then the walk took two or three (FuzzValidValueEnd holds it to
// validJSON).
func validValueEnd(b []byte, i, depth int) int {
	var buf [64]byte
	stack := buf[:0] // the open containers, '{' or '['
	for {
		// A value starts at i.
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth+len(stack) >= maxNesting {
				return -1
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']'
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = keyThenColon(b, i); i < 0 {
					return -1
				}
			}
			continue
		case c == '"':
			i = validString(b, i)
		case c == 't':
			i = literal(b, i, "true")
		case c == 'f':
			i = literal(b, i, "false")
		case c == 'n':
			i = literal(b, i, "null")
		case c == '-' || '0' <= c && c <= '9':
			i = validNumber(b, i)
		default:
			return -1
		}
		if i < 0 {
			return -1
		}
		// A value ended at i: what follows closes its containers, or
		// separates it from the next.
		for {
			if len(stack) == 0 {
				return i
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return -1
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i = keyThenColon(b, i); i < 0 {
					return -1
				}
			}
			break
		}
	}
}

// checkedMembers walks the members of a document's root object in one
// pass, each member's value checked as JSON (validValueEnd) as its end is
// found: next moves to the next member (its key and value spans in it),
// false after the last or at bytes that are not JSON; then ok reports
// whether the whole document was one JSON object. A decoder returns a
// member's error only once ok, as when the document was checked first.
type checkedMembers struct {
	it  memberIter
	i   int // the next member's key; -1 after the last
	end int // the object's end, after the last
	bad bool
}

// openCheckedMembers starts checkedMembers over data, whose root object
// starts at data[i].
func openCheckedMembers(data []byte, i int) checkedMembers {
	var m checkedMembers
	m.open(data, i)
	return m
}

// open is openCheckedMembers into m, which is zero: a walker on the
// stack of its caller, where one returned by value was also a copy in the
// caller's frame.
func (m *checkedMembers) open(data []byte, i int) {
	m.it.b, m.i = data, skipSpace(data, i+1)
	if m.i < len(data) && data[m.i] == '}' {
		m.i, m.end = -1, m.i+1
	}
}

// next moves to the next member; false after the last or at an error.
func (m *checkedMembers) next() bool {
	data, i := m.it.b, m.i
	if i < 0 || m.bad {
		return false
	}
	if i >= len(data) || data[i] != '"' {
		m.bad = true
		return false
	}
	kEnd := validString(data, i)
	if kEnd < 0 {
		m.bad = true
		return false
	}
	c := skipSpace(data, kEnd)
	if c >= len(data) || data[c] != ':' {
		m.bad = true
		return false
	}
	vStart := skipSpace(data, c+1)
	vEnd := validValueEnd(data, vStart, 1)
	if vEnd < 0 {
		m.bad = true
		return false
	}
	m.it.k, m.it.v = span{i, kEnd}, span{vStart, vEnd}
	j := skipSpace(data, vEnd)
	switch {
	case j >= len(data):
		m.bad = true
	case data[j] == '}':
		m.i, m.end = -1, j+1
	case data[j] == ',':
		m.i = skipSpace(data, j+1)
	default:
		m.bad = true
	}
	return true
}

// ok reports, after the last member, whether the document was one JSON
// object and nothing after it but space.
func (m *checkedMembers) ok() bool {
	for m.next() {
	}
	return !m.bad && skipSpace(m.it.b, m.end) == len(m.it.b)
}
