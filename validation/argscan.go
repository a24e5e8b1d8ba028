package validation

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/internal/safetext"
)

// scanArgs returns a violation when data, which must be valid JSON (it is
// called after a successful decode), nests deeper than [MaxDepth], has an
// object with the same key twice, holds more than [MaxValues] values (all
// three at the root) or a number out of range (at the number); nil
// otherwise.
//
// encoding/json keeps the last of duplicate keys; other parsers (a tool's
// own, a provider's) may keep the first, so a validator that passed such
// arguments would have validated a value the tool may never see. The scan is
// one pass over the bytes; it allocates only for deep or wide arguments and
// for keys that contain escapes or invalid UTF-8 (which are compared as
// decoded, as the decoder would). It also returns the number of values.
func scanArgs(data []byte) (values int, problem *Error) {
	var stackBuf [16]frame
	var keysBuf [64][]byte
	stack := stackBuf[:0]
	keys := keysBuf[:0]   // keys of the open objects, normalized
	const linearKeys = 16 // compare linearly up to this many keys per object
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case 't', 'f', 'n':
			values++
		case '{', '[':
			if len(stack) == MaxDepth {
				return values, tooDeep()
			}
			values++
			stack = append(stack, frame{object: c == '{', expectKey: c == '{', keysFrom: len(keys)})
		case '}', ']':
			if len(stack) == 0 {
				return values, nil
			}
			top := &stack[len(stack)-1]
			if top.object {
				keys = keys[:top.keysFrom]
			}
			stack = stack[:len(stack)-1]
		case ',':
			if len(stack) == 0 {
				return values, nil
			}
			top := &stack[len(stack)-1]
			if top.object {
				top.expectKey = true
			} else {
				top.index++
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			values++
			start := i
			for i+1 < len(data) && isNumberByte(data[i+1]) {
				i++
			}
			if num := data[start : i+1]; !numberInRange(num) {
				v := Violation{Path: pointer(stack), Keyword: "json", Got: safetext.Preview(json.Number(num), maxGot),
					Message: "number out of range: at most " + strconv.Itoa(MaxNumberLength) +
						" characters and an exponent within ±" + strconv.Itoa(MaxNumberExponent) + " are accepted"}
				return values, &Error{Violations: []Violation{v}}
			}
		case '"':
			start := i
			if i = stringEnd(data, i+1); i < 0 {
				return values, nil // unterminated: not valid JSON, not our concern
			}
			if len(stack) == 0 {
				values++
				continue
			}
			top := &stack[len(stack)-1]
			if !top.object || !top.expectKey {
				values++
				continue
			}
			top.expectKey = false
			k := data[start+1 : i]
			if bytes.IndexByte(k, '\\') >= 0 || !utf8.Valid(k) {
				var s string
				if err := json.Unmarshal(data[start:i+1], &s); err == nil {
					k = []byte(s)
				}
			}
			top.key = k
			n := len(keys) - top.keysFrom
			dup := false
			switch {
			case top.set != nil:
				_, dup = top.set[string(k)]
				top.set[string(k)] = struct{}{}
			case n < linearKeys:
				for _, prev := range keys[top.keysFrom:] {
					if bytes.Equal(prev, k) {
						dup = true
						break
					}
				}
			default:
				top.set = make(map[string]struct{}, 2*n)
				for _, prev := range keys[top.keysFrom:] {
					top.set[string(prev)] = struct{}{}
				}
				_, dup = top.set[string(k)]
				top.set[string(k)] = struct{}{}
			}
			if dup {
				return values, rootViolation("arguments are ambiguous JSON: the key "+safetext.Quote(string(k), maxPath)+
					" appears more than once in the object at "+safetext.PathLabel(pointer(stack[:len(stack)-1]))+
					" (byte "+strconv.Itoa(start)+"); send each key once", "")
			}
			if top.set == nil {
				keys = append(keys, k)
			}
		}
	}
	if values > MaxValues {
		return values, tooMany(values, MaxValues)
	}
	return values, nil
}

// frame is one open object or array during scanArgs.
type frame struct {
	object    bool
	expectKey bool                // in an object: the next string is a key
	keysFrom  int                 // this object's keys start at keys[keysFrom]
	set       map[string]struct{} // replaces keys for an object with many keys
	index     int                 // in an array: the current element
	key       []byte              // in an object: the current key
}

// pointer returns the JSON Pointer of the value the innermost frame of
// stack is at.
func pointer(stack []frame) string {
	var p []byte
	for _, f := range stack {
		p = append(p, '/')
		if f.object {
			p = append(p, jsonptr.Escape(string(f.key))...)
		} else {
			p = strconv.AppendInt(p, int64(f.index), 10)
		}
	}
	return string(p)
}

// stringEnd returns the index of the quote that closes the string whose
// content starts at data[from], or -1.
func stringEnd(data []byte, from int) int {
	for j := from; j <= len(data); {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			return -1
		}
		q += j
		backslashes := 0
		for b := q - 1; b >= from && data[b] == '\\'; b-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return q
		}
		j = q + 1
	}
	return -1
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// numberInRange reports whether a JSON number literal is short enough and
// its exponent small enough for the validator to turn it into an exact
// rational cheaply.
func numberInRange(num []byte) bool {
	if len(num) > MaxNumberLength {
		return false
	}
	i := bytes.IndexAny(num, "eE")
	if i < 0 {
		return true
	}
	exp := num[i+1:]
	if len(exp) > 0 && (exp[0] == '+' || exp[0] == '-') {
		exp = exp[1:]
	}
	exp = bytes.TrimLeft(exp, "0")
	if len(exp) == 0 {
		return true // e0
	}
	if len(exp) > 6 {
		return false
	}
	e, err := strconv.Atoi(string(exp))
	return err == nil && e <= MaxNumberExponent
}
