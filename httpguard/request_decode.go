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

// readRequest reads the request body b (checked by readableBody) by hand
// into what set keeps of the members of its object named by keys
// (requestMembers); false to leave b to encoding/json.
func readRequest(b []byte, set func(key string, v span) bool, keys ...string) bool {
	sp, ok := requestObject(b)
	return ok && requestMembers(b, sp, set, keys...)
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

// requestObject returns the span of the object b holds, b being valid
// JSON, without reading it through: from its first byte that is not
// space to its last. ok is false when b does not start and end as an
// object.
func requestObject(b []byte) (sp span, ok bool) {
	i, end := skipSpace(b, 0), len(b)
	for end > i && isSpace(b[end-1]) {
		end--
	}
	if end-i < 2 || b[i] != '{' || b[end-1] != '}' {
		return span{}, false
	}
	return span{i, end}, true
}

// requestMembers calls set with each member of the object at sp whose key
// is one of keys spelled exactly, passing that key and the member's
// value; members of other keys are skipped. It is false, for the caller
// to leave the request to encoding/json, when sp is not an object, a key
// of keys is given twice, a member's key matches one of keys only as
// encoding/json matches a key without regard to case (matchKey), or set
// is false. At most 64 keys.
func requestMembers(b []byte, sp span, set func(key string, v span) bool, keys ...string) bool {
	i, err := firstMember(b, sp)
	if err != nil {
		return false
	}
	var seen uint64
	for i >= 0 {
		k, v, next, err := scanMember(b, sp, i)
		if err != nil {
			return false
		}
		q := raw(b, k)
		for n, key := range keys {
			m, err := matchKey(q, key, true)
			if err != nil || m == keyFolded || m == keyExact && seen&(1<<n) != 0 {
				return false
			}
			if m == keyExact {
				seen |= 1 << n
				if !set(key, v) {
					return false
				}
				break
			}
		}
		i = next
	}
	return true
}

// requestElems calls each with every element of the array at sp, in
// order; false when sp is not an array or each is false. A null array is
// the caller's to read (it leaves a slice nil).
func requestElems(b []byte, sp span, each func(e span) bool) bool {
	if kind(b, sp) != '[' {
		return false
	}
	i := skipSpace(b, sp.start+1)
	if i < sp.end && b[i] == ']' {
		return true
	}
	for i < sp.end {
		end, err := valueEnd(b, i)
		if err != nil || !each(span{i, end}) {
			return false
		}
		i = skipSpace(b, end)
		if i >= sp.end {
			return false
		}
		if b[i] == ']' {
			return true
		}
		if b[i] != ',' {
			return false
		}
		i = skipSpace(b, i+1)
	}
	return false
}

// requestSlice reads the array at v into *dst as json.Unmarshal fills a
// nil slice of structs: null leaves it nil, [] makes it empty, and each
// element is read by elem into a zero T appended to it (a null element
// stays zero, as encoding/json leaves a struct for null). False for any
// other kind.
func requestSlice[T any](b []byte, v span, dst *[]T, elem func(t *T, b []byte, sp span) bool) bool {
	switch kind(b, v) {
	case 'n':
		return true
	case '[':
	default:
		return false
	}
	n := 0
	requestElems(b, v, func(span) bool { n++; return true })
	out := make([]T, 0, n)
	ok := requestElems(b, v, func(e span) bool {
		out = append(out, *new(T))
		return kind(b, e) == 'n' || elem(&out[len(out)-1], b, e)
	})
	*dst = out
	return ok
}

// requestObjectPtr reads the object at v by obj into a new T at *dst, as
// json.Unmarshal fills a nil pointer to a struct; null sets it nil. False
// for any other kind.
func requestObjectPtr[T any](b []byte, v span, dst **T, obj func(t *T, b []byte, sp span) bool) bool {
	switch kind(b, v) {
	case 'n':
		*dst = nil
		return true
	case '{':
		p := new(T)
		*dst = p
		return obj(p, b, v)
	}
	return false
}

// requestString reads the string at v into *dst as encoding/json decodes
// it (str); null leaves *dst as it is. A string spelled as one of known
// is set to that constant, without a copy. False for any other kind.
func requestString(b []byte, v span, dst *string, known ...string) bool {
	switch kind(b, v) {
	case 'n':
		return true
	case '"':
	default:
		return false
	}
	q := raw(b, v)
	for _, k := range known {
		if len(q) == len(k)+2 && string(q[1:len(q)-1]) == k {
			*dst = k
			return true
		}
	}
	s, err := str(b, v)
	*dst = s
	return err == nil
}

// requestStringPtr reads the string at v into *dst, null setting it nil.
func requestStringPtr(b []byte, v span, dst **string) bool {
	if kind(b, v) == 'n' {
		*dst = nil
		return true
	}
	s := new(string)
	*dst = s
	return requestString(b, v, s)
}

// requestBool reads true or false at v into *dst; null leaves it. False
// for any other kind.
func requestBool(b []byte, v span, dst *bool) bool {
	switch kind(b, v) {
	case 't':
		*dst = true
	case 'f':
		*dst = false
	case 'n':
	default:
		return false
	}
	return true
}

// requestBoolPtr reads true or false at v into *dst, null setting it nil.
func requestBoolPtr(b []byte, v span, dst **bool) bool {
	if kind(b, v) == 'n' {
		*dst = nil
		return true
	}
	p := new(bool)
	*dst = p
	return requestBool(b, v, p)
}

// requestIntPtr reads the number at v into *dst as encoding/json reads
// it into an *int, null setting it nil. False for any other kind, and
// for a number encoding/json refuses for an int (a fraction, an
// exponent, one past the int's range).
func requestIntPtr(b []byte, v span, dst **int) bool {
	switch c := kind(b, v); {
	case c == 'n':
		*dst = nil
		return true
	case c != '-' && (c < '0' || c > '9'):
		return false
	}
	n, err := strconv.ParseInt(string(raw(b, v)), 10, strconv.IntSize)
	if err != nil {
		return false
	}
	p := new(int)
	*p = int(n)
	*dst = p
	return true
}

// requestRaw sets *dst to the bytes of the value at v, whatever its kind
// (null is "null"), as json.RawMessage decodes it; the slice ends where
// the value does.
func requestRaw(b []byte, v span, dst *json.RawMessage) bool {
	*dst = b[v.start:v.end:v.end]
	return true
}

// requestKind sets *dst to the kind of the value at v, as jsonKind
// decodes it.
func requestKind(b []byte, v span, dst *jsonKind) bool {
	*dst = jsonKind(kind(b, v))
	return true
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

// decodeFunctionTool reads the object at sp into t (readRequest).
func decodeFunctionTool(t *functionTool, b []byte, sp span) bool {
	return requestMembers(b, sp, func(key string, v span) bool {
		switch key {
		case "type":
			return requestString(b, v, &t.Type, "function")
		case "function":
			return requestObjectPtr(b, v, &t.Function, decodeFunctionDecl)
		}
		return false
	}, "type", "function")
}

// decodeFunctionDecl reads the object at sp into d (readRequest).
func decodeFunctionDecl(d *functionDecl, b []byte, sp span) bool {
	return requestMembers(b, sp, func(key string, v span) bool {
		switch key {
		case "name":
			return requestString(b, v, &d.Name)
		case "parameters":
			return requestRaw(b, v, &d.Parameters)
		}
		return false
	}, "name", "parameters")
}
