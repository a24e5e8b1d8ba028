package canonjson

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// The examples of RFC 8785 §3.2.2 and §3.2.3.
func TestRFC8785Examples(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{`{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
	} {
		got, err := RFC8785([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("RFC8785(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// The number samples of RFC 8785 Appendix B, by their IEEE 754 bits.
func TestRFC8785Numbers(t *testing.T) {
	t.Parallel()
	for bits, want := range map[uint64]string{
		0x0000000000000000: "0",
		0x8000000000000000: "0",
		0x0000000000000001: "5e-324",
		0x8000000000000001: "-5e-324",
		0x7fefffffffffffff: "1.7976931348623157e+308",
		0xffefffffffffffff: "-1.7976931348623157e+308",
		0x4340000000000000: "9007199254740992",
		0xc340000000000000: "-9007199254740992",
		0x4430000000000000: "295147905179352830000",
		0x44b52d02c7e14af5: "9.999999999999997e+22",
		0x44b52d02c7e14af6: "1e+23",
		0x44b52d02c7e14af7: "1.0000000000000001e+23",
		0x444b1ae4d6e2ef4e: "999999999999999700000",
		0x444b1ae4d6e2ef4f: "999999999999999900000",
		0x444b1ae4d6e2ef50: "1e+21",
		0x3eb0c6f7a0b5ed8c: "9.999999999999997e-7",
		0x3eb0c6f7a0b5ed8d: "0.000001",
		0x41b3de4355555553: "333333333.3333332",
		0x41b3de4355555554: "333333333.33333325",
		0x41b3de4355555555: "333333333.3333333",
		0x41b3de4355555556: "333333333.3333334",
		0x41b3de4355555557: "333333333.33333343",
		0xbecbf647612f3696: "-0.0000033333333333333333",
		0x43143ff3c1cb0959: "1424953923781206.2",
	} {
		f := math.Float64frombits(bits)
		if got := es6(f); got != want {
			t.Errorf("es6(%#016x) = %s, want %s", bits, got, want)
		}
		lit, _ := json.Marshal(f)
		if got, err := RFC8785(lit); err != nil || string(got) != want {
			t.Errorf("RFC8785(%s) = %s, %v; want %s", lit, got, err, want)
		}
	}
}

// What a JSON round trip through doubles does to numbers does not change
// the RFC 8785 form; Exact keeps them as written.
func TestRoundTripThroughDoubles(t *testing.T) {
	t.Parallel()
	in := `{"a": 0.0, "b": 1e6, "c": 0.50, "d": 9007199254740993, "e": "x<y&z", "f": [1E2, -0]}`
	var v any
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	back, _ := json.Marshal(v) // escapes HTML, rounds the numbers
	c1, err1 := RFC8785([]byte(in))
	c2, err2 := RFC8785(back)
	if err1 != nil || err2 != nil || string(c1) != string(c2) {
		t.Errorf("RFC8785 before and after the round trip: %s (%v), %s (%v)", c1, err1, c2, err2)
	}
	if want := `{"a":0,"b":1000000,"c":0.5,"d":9007199254740992,"e":"x<y&z","f":[100,0]}`; string(c1) != want {
		t.Errorf("RFC8785(%s) = %s, want %s", in, c1, want)
	}
	e, err := Exact([]byte(in))
	if want := `{"a":0.0,"b":1e6,"c":0.50,"d":9007199254740993,"e":"x<y&z","f":[1E2,-0]}`; err != nil || string(e) != want {
		t.Errorf("Exact(%s) = %s, %v; want %s", in, e, err, want)
	}
	// A json.RawMessage keeps numbers as written: Exact agrees after it.
	raw, _ := json.Marshal(struct{ A json.RawMessage }{json.RawMessage(in)})
	var w struct{ A json.RawMessage }
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	if e2, err := Exact(w.A); err != nil || string(e2) != string(e) {
		t.Errorf("Exact after a RawMessage round trip = %s, %v; want %s", e2, err, e)
	}
}

// Escapes that decode alike canonicalize alike; what is not one JSON value,
// repeats a name or nests too deeply is an error; everything toolguard
// accepts in arguments has a form.
func TestCanonicalEdges(t *testing.T) {
	t.Parallel()
	same := [][2]string{
		{`{"a":"\u0061\/\u003c"}`, `{ "a" : "a/<" }`},
		{`"\ud800"`, `"\ufffd"`}, // a lone surrogate reads as U+FFFD
		{"\"\xff\"", `"\ufffd"`}, // so does a byte that is not UTF-8
		{`{"b":1,"a":[true,null]}`, `{"a":[true,null],"b":1}`},
	}
	for _, p := range same {
		a, err1 := RFC8785([]byte(p[0]))
		b, err2 := RFC8785([]byte(p[1]))
		if err1 != nil || err2 != nil || string(a) != string(b) {
			t.Errorf("RFC8785(%s) = %s (%v), RFC8785(%s) = %s (%v): want equal", p[0], a, err1, p[1], b, err2)
		}
	}
	if got, err := RFC8785([]byte(`{"x": 1e400, "y": -1e-400}`)); err != nil || string(got) != `{"x":1e400,"y":0}` {
		t.Errorf("RFC8785(beyond a double) = %s, %v; want 1e400 as written and 0", got, err)
	}
	for _, bad := range []string{``, `{`, `{"a":1}{}`, `{"a":1,"a":2}`, `{"\u0061":1,"a":2}`, `[1,]`, `nul`,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)} {
		if got, err := RFC8785([]byte(bad)); err == nil {
			t.Errorf("RFC8785(%.40q) = %s, want an error", bad, got)
		}
		if got, err := Exact([]byte(bad)); err == nil {
			t.Errorf("Exact(%.40q) = %s, want an error", bad, got)
		}
	}
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := RFC8785([]byte(ok)); err != nil {
		t.Errorf("RFC8785(%d levels) = %v, want no error", MaxDepth, err)
	}
}
