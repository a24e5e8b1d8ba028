package httpguard

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Reading a request by hand. Each protocol's parseRequest reads the
// request body into a struct of what it needs (chatRequest,
// messagesRequest, …), which json.Unmarshal filled by reflection on every
// request, after its own pass to check the body: about a seventh of a
// guarded sync call's CPU. The upstream reads the same body, so the
// request must be read exactly as encoding/json reads it: a key matches a
// field spelled exactly, else without regard to case, the last of two
// wins, null leaves a field as it was (and sets a pointer or a slice to
// nil, a json.RawMessage to "null"), a value of another kind is an
// error, strings are unescaped and invalid UTF-8 read as U+FFFD.
//
// The requests the SDKs send are read by hand (decodeChatRequest, …,
// over the helpers below): each key spelled as the protocol spells it,
// given once, its value of the kind the struct holds. A request with
// anything else in a member the struct reads (a key in another case, a
// key given twice, a value of another kind, a number no int holds) is
// read whole by json.Unmarshal, as before: exactness rests on that
// fallback, and on TestParseRequestMatchesOracle and FuzzParseRequest*,
// which hold parseRequest to what it was (request_oracle_test.go).
// Members the struct does not read (the conversation itself) are
// skipped, never decoded. The body has passed readableBody, so it is one
// valid JSON object; on anything else the helpers decline, never panic.
//
// A json.RawMessage read by hand (a tool's schema, Responses' input) is a
// slice of the body, where json.Unmarshal copies each. Nothing writes to
// a request body once it is read (a re-ask, a cleaned request, is a new
// slice: apply), and the slice's capacity ends with the value, so that an
// append to it cannot reach the body's next bytes. The schemas a
// parseRequest returns are copied all into one array (ownSchemas): the
// validation cache knows a schema by its address and keeps it, and must
// not keep a request body of up to MaxBody with it.
//
// The structs are aliases of struct literals, not defined types:
// encoding/json names a struct's type in its errors ("Go struct field
// .model of type string"), which reach the client in a refusal's
// message, and a request must fail as it always has.

// readRequest reads the request body b (checked by readableBody) by hand:
// set reads the members of its object named by keys (requestMembers).
// False to leave b to encoding/json.
func readRequest(b []byte, set func(key string, at int) (end int, ok bool), keys ...string) bool {
	end, ok := requestMembers(b, skipSpace(b, 0), set, keys...)
	return ok && skipSpace(b, end) == len(b)
}

// unmarshalRequest decodes the request body b, which readableBody has
// checked, into a T, the struct of what a protocol's parseRequest reads;
// errJSON with encoding/json's words when the body does not fit it.
func unmarshalRequest[T any](b []byte) (T, error) {
	var req T
	if err := json.Unmarshal(b, &req); err != nil {
		return req, fmt.Errorf("%w: %v", errJSON, err)
	}
	return req, nil
}

// The readers below read the value that starts at b[at] and return the
// index just past it (end), each value read in one pass: a member a
// struct reads is decoded as it is scanned, one it does not is skipped
// (valueEnd). ok false, for the caller to leave the request to
// encoding/json, when the value is not what the reader reads.

// byteAt is b[i], 0 past the end of b.
func byteAt(b []byte, i int) byte {
	if i < 0 || i >= len(b) {
		return 0
	}
	return b[i]
}

// skipValue returns the end of the value at b[at].
func skipValue(b []byte, at int) (end int, ok bool) {
	end, err := valueEnd(b, at)
	return end, err == nil
}

// requestMembers reads the object at b[at]: set reads each member whose
// key is one of keys spelled exactly, given that key and where the value
// starts; members of other keys are skipped. Not ok when the value is not
// an object, a key of keys is given twice, a member's key matches one of
// keys only as encoding/json matches a key without regard to case
// (matchKey), or set is not ok. At most 64 keys.
func requestMembers(b []byte, at int, set func(key string, at int) (end int, ok bool), keys ...string) (end int, ok bool) {
	if byteAt(b, at) != '{' {
		return 0, false
	}
	i := skipSpace(b, at+1)
	if byteAt(b, i) == '}' {
		return i + 1, true
	}
	var seen uint64
	for {
		if byteAt(b, i) != '"' {
			return 0, false
		}
		kEnd, err := stringEnd(b, i)
		if err != nil {
			return 0, false
		}
		c := skipSpace(b, kEnd)
		if byteAt(b, c) != ':' {
			return 0, false
		}
		v := skipSpace(b, c+1)
		end := -1
		for n, key := range keys {
			m, err := matchKey(b[i:kEnd], key, true)
			if err != nil || m == keyFolded || m == keyExact && seen&(1<<n) != 0 {
				return 0, false
			}
			if m == keyExact {
				seen |= 1 << n
				if end, ok = set(key, v); !ok || end <= v {
					return 0, false
				}
				break
			}
		}
		if end < 0 {
			if end, ok = skipValue(b, v); !ok {
				return 0, false
			}
		}
		i = skipSpace(b, end)
		switch byteAt(b, i) {
		case '}':
			return i + 1, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return 0, false
		}
	}
}

// requestSlice reads the array at b[at] into *dst as json.Unmarshal fills
// a nil slice of structs: null leaves it nil, [] makes it empty, and each
// element is read by elem into a zero T appended to it (a null element
// stays zero, as encoding/json leaves a struct for null). Not ok for any
// other kind.
func requestSlice[T any](b []byte, at int, dst *[]T, elem func(t *T, b []byte, at int) (end int, ok bool)) (end int, ok bool) {
	switch byteAt(b, at) {
	case 'n':
		return skipValue(b, at)
	case '[':
	default:
		return 0, false
	}
	i := skipSpace(b, at+1)
	if byteAt(b, i) == ']' {
		*dst = []T{}
		return i + 1, true
	}
	var out []T
	for {
		out = append(out, *new(T))
		if byteAt(b, i) == 'n' {
			end, ok = skipValue(b, i)
		} else {
			end, ok = elem(&out[len(out)-1], b, i)
		}
		if !ok || end <= i {
			return 0, false
		}
		i = skipSpace(b, end)
		switch byteAt(b, i) {
		case ']':
			*dst = out
			return i + 1, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return 0, false
		}
	}
}

// requestObjectPtr reads the object at b[at] by obj into a new T at
// *dst, as json.Unmarshal fills a nil pointer to a struct; null sets it
// nil. Not ok for any other kind.
func requestObjectPtr[T any](b []byte, at int, dst **T, obj func(t *T, b []byte, at int) (end int, ok bool)) (end int, ok bool) {
	switch byteAt(b, at) {
	case 'n':
		*dst = nil
		return skipValue(b, at)
	case '{':
		p := new(T)
		*dst = p
		return obj(p, b, at)
	}
	return 0, false
}

// requestString reads the string at b[at] into *dst as encoding/json
// decodes it (str); null leaves *dst as it is. A string spelled as one of
// known is set to that constant, without a copy. Not ok for any other
// kind.
func requestString(b []byte, at int, dst *string, known ...string) (end int, ok bool) {
	switch byteAt(b, at) {
	case 'n':
		return skipValue(b, at)
	case '"':
	default:
		return 0, false
	}
	end, err := stringEnd(b, at)
	if err != nil {
		return 0, false
	}
	q := b[at:end]
	for _, k := range known {
		if len(q) == len(k)+2 && string(q[1:len(q)-1]) == k {
			*dst = k
			return end, true
		}
	}
	s, err := str(b, span{at, end})
	*dst = s
	return end, err == nil
}

// requestStringPtr reads the string at b[at] into *dst, null setting it
// nil.
func requestStringPtr(b []byte, at int, dst **string) (end int, ok bool) {
	if byteAt(b, at) == 'n' {
		*dst = nil
		return skipValue(b, at)
	}
	s := new(string)
	*dst = s
	return requestString(b, at, s)
}

// requestBool reads true or false at b[at] into *dst; null leaves it. Not
// ok for any other kind.
func requestBool(b []byte, at int, dst *bool) (end int, ok bool) {
	switch byteAt(b, at) {
	case 't':
		*dst = true
	case 'f':
		*dst = false
	case 'n':
	default:
		return 0, false
	}
	return skipValue(b, at)
}

// requestBoolPtr reads true or false at b[at] into *dst, null setting it
// nil.
func requestBoolPtr(b []byte, at int, dst **bool) (end int, ok bool) {
	if byteAt(b, at) == 'n' {
		*dst = nil
		return skipValue(b, at)
	}
	p := new(bool)
	*dst = p
	return requestBool(b, at, p)
}

// requestIntPtr reads the number at b[at] into *dst as encoding/json
// reads it into an *int, null setting it nil. Not ok for any other kind,
// nor for a number encoding/json refuses for an int (a fraction, an
// exponent, one past the int's range).
func requestIntPtr(b []byte, at int, dst **int) (end int, ok bool) {
	switch c := byteAt(b, at); {
	case c == 'n':
		*dst = nil
		return skipValue(b, at)
	case c != '-' && (c < '0' || c > '9'):
		return 0, false
	}
	if end, ok = skipValue(b, at); !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b[at:end]), 10, strconv.IntSize)
	if err != nil {
		return 0, false
	}
	p := new(int)
	*p = int(n)
	*dst = p
	return end, true
}

// requestRaw sets *dst to the bytes of the value at b[at], whatever its
// kind (null is "null"), as json.RawMessage decodes it; the slice's
// capacity ends with the value.
func requestRaw(b []byte, at int, dst *json.RawMessage) (end int, ok bool) {
	if end, ok = skipValue(b, at); ok {
		*dst = b[at:end:end]
	}
	return end, ok
}

// requestKind sets *dst to the kind of the value at b[at], as jsonKind
// decodes it.
func requestKind(b []byte, at int, dst *jsonKind) (end int, ok bool) {
	*dst = jsonKind(byteAt(b, at))
	return skipValue(b, at)
}

// functionTool is a tool of a request whose function tools are
// tools[].function (OpenAI Chat Completions', Ollama's).
type functionTool = struct {
	Type     string        `json:"type"`
	Function *functionDecl `json:"function"`
}

// functionDecl is a functionTool's function.
type functionDecl = struct {
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
}

// ownSchemas returns w with its tools' schemas copied into one new array,
// each capped at its end: a schema read by hand is a slice of the request
// body, which whatever keeps the schema past the call (the validation
// cache keeps a few of every schema it sees, by address) would keep whole.
func ownSchemas(w wireRequest) wireRequest {
	n := 0
	for _, t := range w.Tools {
		n += len(t.Schema)
	}
	if n == 0 {
		return w
	}
	buf := make([]byte, 0, n)
	for i, t := range w.Tools {
		if t.Schema != nil {
			start := len(buf)
			buf = append(buf, t.Schema...)
			w.Tools[i].Schema = buf[start:len(buf):len(buf)]
		}
	}
	return w
}

// decodeFunctionTool reads the object at b[at] into t (readRequest).
func decodeFunctionTool(t *functionTool, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(key string, v int) (int, bool) {
		switch key {
		case "type":
			return requestString(b, v, &t.Type, "function")
		case "function":
			return requestObjectPtr(b, v, &t.Function, decodeFunctionDecl)
		}
		return 0, false
	}, "type", "function")
}

// decodeFunctionDecl reads the object at b[at] into d (readRequest).
func decodeFunctionDecl(d *functionDecl, b []byte, at int) (int, bool) {
	return requestMembers(b, at, func(key string, v int) (int, bool) {
		switch key {
		case "name":
			return requestString(b, v, &d.Name)
		case "parameters":
			return requestRaw(b, v, &d.Parameters)
		}
		return 0, false
	}, "name", "parameters")
}
