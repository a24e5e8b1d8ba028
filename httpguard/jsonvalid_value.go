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
