// Package exactjson decodes JSON with numbers kept exactly (json.Number),
// the one decoder setup toolguard uses wherever it reads JSON that a model
// or a schema author wrote.
package exactjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
)

// TrailingDataError reports JSON text with data after its value.
type TrailingDataError struct {
	Offset int64 // where the value ended, in bytes
}

// Error says that data follows the JSON value.
func (e *TrailingDataError) Error() string {
	return "unexpected data after the JSON value at byte " + strconv.FormatInt(e.Offset, 10)
}

// ErrNotObject is returned by DecodeObject for JSON text that is not an
// object (null included).
var ErrNotObject = errors.New("not a JSON object")

// Decode decodes data, which must hold exactly one JSON value (blanks
// around it allowed), with numbers as json.Number. Data after the value is
// a *TrailingDataError; other failures are encoding/json's errors.
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return nil, &TrailingDataError{Offset: end}
	}
	return v, nil
}

// DecodeObject is Decode for a JSON object: any other value is ErrNotObject.
func DecodeObject(data []byte) (map[string]any, error) {
	v, err := Decode(data)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok || m == nil {
		return nil, ErrNotObject
	}
	return m, nil
}

// Encode returns v as compact JSON without HTML escaping, numbers written
// exactly as decoded.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Text returns the JSON text of v: v itself for JSON text given as a
// json.RawMessage, []byte or string, else v marshaled with encoding/json.
// The text is not checked.
func Text(v any) ([]byte, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return x, nil
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	}
	return json.Marshal(v)
}
