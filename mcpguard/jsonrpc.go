package mcpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The JSON-RPC messages the transport reads: it decodes only the members it
// needs, in one pass, keeping every other byte as it came, so that what it
// forwards differs from what it received only where it cleaned arguments.

// errNotObject is returned by [members] for JSON that is not one object.
var errNotObject = errors.New("not a JSON object")

// duplicateKeyError is returned by [members] for an object that gives a key
// it reads twice: parsers disagree about which value counts (encoding/json
// and the SDKs keep the last, others the first), so the transport cannot
// know what the server will read.
type duplicateKeyError struct{ key string }

func (e *duplicateKeyError) Error() string { return fmt.Sprintf("key %q given twice", e.key) }

// member is the raw value of one key of an object, and where it starts in
// the object's bytes; value is nil when the key is absent.
type member struct {
	value []byte
	off   int
}

// members reads the JSON object data and returns, for each of keys, its
// raw value (a sub-slice of data) and offset. Keys are matched exactly, as
// the MCP SDKs match them; a key of keys given twice is an error, since
// parsers disagree about which value counts. data must hold one object and
// nothing after it but blanks.
func members(data []byte, keys ...string) ([]member, error) {
	if !json.Valid(data) {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, err
		}
		return nil, errors.New("not valid JSON")
	}
	return membersOf(data, keys...)
}

// membersOf is members for data known to be valid JSON (a sub-slice of
// a message members read), which it walks without checking again.
func membersOf(data []byte, keys ...string) ([]member, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, errNotObject
	}
	out := make([]member, len(keys))
	i++
	for {
		i = skipSpace(data, i)
		switch data[i] {
		case '}':
			return out, nil
		case ',':
			i = skipSpace(data, i+1)
		}
		ke := skipString(data, i)
		rawKey := data[i:ke]
		i = skipSpace(data, ke) + 1 // past the colon
		vs := skipSpace(data, i)
		i = skipValue(data, vs)
		for n, k := range keys {
			if !keyIs(rawKey, k) {
				continue
			}
			if out[n].value != nil {
				return nil, &duplicateKeyError{k}
			}
			out[n] = member{value: data[vs:i:i], off: vs}
		}
	}
}

// skipSpace returns the index of the first byte of data at or after i
// that is not a JSON blank.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
			continue
		}
		return i
	}
	return i
}

// skipString returns the index just past the JSON string that starts at
// data[i] (valid JSON).
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// skipValue returns the index just past the JSON value that starts at
// data[i] (valid JSON).
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = skipString(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	}
	for j := i; j < len(data); j++ {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return len(data)
}

// keyIs reports whether rawKey, a JSON string literal, holds k; it
// allocates only for a key written with escapes.
func keyIs(rawKey []byte, k string) bool {
	if bytes.IndexByte(rawKey, '\\') < 0 {
		return string(rawKey[1:len(rawKey)-1]) == k
	}
	key, ok := unquote(rawKey)
	return ok && key == k
}

// unquote returns the string a JSON string literal holds.
func unquote(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// message is one JSON-RPC message, as far as the transport reads it.
type message struct {
	id     []byte // raw; nil for a notification
	method string // "" for a response
	params member
	result member
}

// decodeMessage reads one JSON-RPC 2.0 message. A message that is not one
// ("jsonrpc" is not "2.0", the method is not a string, the id is neither a
// string nor a number, a member given twice) is an error: the transport
// passes it on, and the server answers it.
func decodeMessage(data []byte) (message, error) {
	ms, err := members(data, "jsonrpc", "id", "method", "params", "result")
	if err != nil {
		return message{}, err
	}
	if string(ms[0].value) != `"2.0"` {
		return message{}, errors.New(`"jsonrpc" is not "2.0"`)
	}
	m := message{params: ms[3], result: ms[4]}
	if ms[1].value != nil {
		if !validID(ms[1].value) {
			return message{}, errors.New("the id is neither a string nor a number")
		}
		m.id = ms[1].value
	}
	if ms[2].value != nil {
		var ok bool
		if m.method, ok = unquote(ms[2].value); !ok || m.method == "" {
			return message{}, errors.New("the method is not a string")
		}
	}
	return m, nil
}

// validID reports whether raw is a JSON-RPC id the transport can answer:
// a string or a number.
func validID(raw []byte) bool {
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == '-' || c >= '0' && c <= '9':
		return true
	}
	return false
}

// sameID reports whether two raw JSON-RPC ids are the same id: equal as
// written, or equal once decoded (a server may re-escape a string).
func sameID(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) == 0 || len(b) == 0 || a[0] != '"' || b[0] != '"' {
		return false
	}
	var sa, sb string
	return json.Unmarshal(a, &sa) == nil && json.Unmarshal(b, &sb) == nil && sa == sb
}

// firstByte returns the first byte of data that is not a JSON blank, or 0.
func firstByte(data []byte) byte {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// callParams are the members of a tools/call's params the transport reads.
type callParams struct {
	name      string
	arguments member // offset relative to the params object
	meta      []byte // raw _meta, or nil
}

// decodeCallParams reads a tools/call's params: an object whose "name" is
// a string.
func decodeCallParams(params []byte) (callParams, error) {
	if params == nil {
		return callParams{}, errors.New("no params")
	}
	ms, err := membersOf(params, "name", "arguments", "_meta")
	if err != nil {
		return callParams{}, err
	}
	var p callParams
	var ok bool
	if ms[0].value == nil {
		return callParams{}, errors.New("no tool name")
	}
	if p.name, ok = unquote(ms[0].value); !ok {
		return callParams{}, errors.New("the tool name is not a string")
	}
	p.arguments, p.meta = ms[1], ms[2].value
	return p, nil
}

// batchHasCall reports whether the JSON array data holds a tools/call
// request (or a message giving a key twice, which may be one), and whether
// it is a well-formed array at all.
func batchHasCall(data []byte) (hasCall, ok bool) {
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		return false, false
	}
	for _, e := range elems {
		m, err := decodeMessage(e)
		var dup *duplicateKeyError
		if err == nil && m.method == "tools/call" || errors.As(err, &dup) {
			return true, true
		}
	}
	return false, true
}
