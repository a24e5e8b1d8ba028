package exactjson

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecodeKeepsNumbersExact(t *testing.T) {
	t.Parallel()
	v, err := Decode([]byte(` {"n": 12345678901234567890, "f": 0.1} `))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["n"] != json.Number("12345678901234567890") || m["f"] != json.Number("0.1") {
		t.Errorf("Decode = %#v, want json.Number values as written", m)
	}
	b, err := Encode(m)
	if err != nil || string(b) != `{"f":0.1,"n":12345678901234567890}` {
		t.Errorf("Encode = %s, %v", b, err)
	}
	if b, _ := Encode(map[string]any{"h": "<a&b>"}); string(b) != `{"h":"<a&b>"}` {
		t.Errorf("Encode escaped HTML: %s", b)
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	var te *TrailingDataError
	if _, err := Decode([]byte(`{"a":1} x`)); !errors.As(err, &te) || te.Offset != 7 {
		t.Errorf("Decode with trailing data = %v, want *TrailingDataError at byte 7", err)
	}
	if _, err := Decode([]byte(`{"a":`)); err == nil {
		t.Error("Decode of truncated JSON succeeded")
	}
	for _, in := range []string{`null`, `[1]`, `"s"`} {
		if _, err := DecodeObject([]byte(in)); !errors.Is(err, ErrNotObject) {
			t.Errorf("DecodeObject(%s) = %v, want ErrNotObject", in, err)
		}
	}
	if m, err := DecodeObject([]byte(`{}`)); err != nil || m == nil {
		t.Errorf("DecodeObject({}) = %v, %v", m, err)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		want string
	}{
		{json.RawMessage(`{"a":1}`), `{"a":1}`},
		{[]byte(`{"a":1}`), `{"a":1}`},
		{`{"a":1}`, `{"a":1}`},
		{map[string]any{"a": 1}, `{"a":1}`},
		{struct {
			A int `json:"a"`
		}{1}, `{"a":1}`},
	} {
		if got, err := Text(tc.in); err != nil || string(got) != tc.want {
			t.Errorf("Text(%T) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := Text(func() {}); err == nil {
		t.Error("Text(func) succeeded")
	}
}
