package repair

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/validation"
)

// pythonCases are Python list and dict literals and their JSON reading
// ("" when parsePython must refuse them). Each accepted one is what
// Python's ast.literal_eval gives (TestParsePythonAgreesWithPython checks
// that against Python itself where it is installed).
var pythonCases = []struct {
	in, want string
}{
	{`['M', 'L']`, `["M","L"]`},
	{`["M", "L"]`, `["M","L"]`},
	{`[1, -2.5, 1e3, -0, 10000000000000000000000]`, `[1,-2.5,1e3,-0,10000000000000000000000]`},
	{`{'a': True, 'b': False, 'c': None}`, `{"a":true,"b":false,"c":null}`},
	{`[]`, `[]`},
	{`{}`, `{}`},
	{`['it\'s', "say \"hi\"", "it's", 'say "hi"']`, `["it's","say \"hi\"","it's","say \"hi\""]`},
	{`['a\x41\u00e9\n\t\\\r\b\f\a\v']`, `["aAé\n\t\\\r\b\f\u0007\u000b"]`},
	{`['\U0001F600', '\101\0', "\x41"]`, `["😀","A\u0000","A"]`},
	{`['C:\dir', '\/']`, `["C:\\dir","\\/"]`},
	{`[1, 2,]`, `[1,2]`},
	{`{'a': [1, {'b': None}],}`, `{"a":[1,{"b":null}]}`},
	{"[ 'a' ,\n\t'b'\r\n]", `["a","b"]`},
	{`["\u00e9", "\ud7ff"]`, `["é","\ud7ff"]`},
	{`[0.0e500, 0e-999, 5e-324]`, `[0.0e500,0e-999,5e-324]`},
	{`{'a': 1, 'b': {'a': 2}}`, `{"a":1,"b":{"a":2}}`},

	{`['a', true]`, ""},         // JSON's names are not Python's
	{`[null]`, ""},              //
	{`[false]`, ""},             //
	{`('a', 'b')`, ""},          // a tuple
	{`{'a', 'b'}`, ""},          // a set
	{`{1: 'a'}`, ""},            // a key that is not a string
	{`{None: 1}`, ""},           //
	{`{True: 1}`, ""},           //
	{`{('a',): 1}`, ""},         //
	{`{'a': 1, 'a': 2}`, ""},    // a key twice
	{`{'a': 1, '\x61': 2}`, ""}, // the same key, escaped
	{`['a' 'b']`, ""},           // implicit concatenation
	{`[u'a']`, ""},              // string prefixes
	{`[r'a\n']`, ""},            //
	{`[b'a']`, ""},              //
	{`[f'{1}']`, ""},            //
	{`['''a''']`, ""},           // triple quotes
	{`[1_000]`, ""},             // not JSON's numbers
	{`[0x1F]`, ""},              //
	{`[1.]`, ""},                //
	{`[.5]`, ""},                //
	{`[+1]`, ""},                //
	{`[- 1]`, ""},               //
	{`[01]`, ""},                //
	{`[1j]`, ""},                //
	{`[1e400]`, ""},             // inf to Python
	{`[1e-400]`, ""},            // 0.0 to Python
	{`["\/"]`, ""},              // "/" to JSON, "\/" to Python
	{`["\ud83d\ude00"]`, ""},    // one character to JSON, two to Python
	{`['\ud800']`, ""},          // a surrogate half
	{`["\q"]`, ""},              // not an escape in JSON
	{`['\N{BULLET}']`, ""},      // named characters
	{"['a\\\nb']", ""},          // a line continuation
	{`[inf]`, ""},               // names
	{`[nan]`, ""},               //
	{`[float('nan')]`, ""},      // calls
	{`[__import__('os')]`, ""},  //
	{`[1 + 2]`, ""},             // expressions
	{`[-True]`, ""},             //
	{` ['a']`, ""},              // blanks around the literal
	{`['a'] `, ""},              //
	{"['a']\n", ""},             //
	{`['a'] # a comment`, ""},   // comments
	{"['a', # a comment\n'b']", ""},
	{"['a\nb']", ""}, // raw control characters
	{"['a\tb']", ""}, //
	{"[\f1]", ""},    // blanks JSON does not have
	{`[1,,2]`, ""},   // syntax errors
	{`[,]`, ""},      //
	{`{,}`, ""},      //
	{`['a': 1]`, ""}, //
	{`{'a' 1}`, ""},  //
	{`['a'`, ""},     //
	{`['a]`, ""},     //
	{`['a'][0]`, ""}, //
	{`['a'], ['b']`, ""},
	{`'a'`, ""},  // not a list or dict
	{`1`, ""},    //
	{`True`, ""}, //
	{`None`, ""}, //
	{``, ""},     //
}

func TestParsePython(t *testing.T) {
	t.Parallel()
	for _, tc := range pythonCases {
		got, ok := parsePython(tc.in)
		if tc.want == "" {
			if ok || got != nil {
				t.Errorf("parsePython(%q) = %v, %v; want refused", tc.in, got, ok)
			}
			continue
		}
		want, err := exactjson.Decode([]byte(tc.want))
		if err != nil {
			t.Fatalf("bad test JSON %q: %v", tc.want, err)
		}
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("parsePython(%q) = %#v, %v; want %#v", tc.in, got, ok, want)
		}
	}
}

// TestParsePythonLimits: the parser reads up to validation.MaxDepth nested
// arrays and objects and validation.MaxValues values, and refuses one more.
func TestParsePythonLimits(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	wide := func(n int) string { return "[" + strings.Repeat("'', ", n-2) + "'']" } // n values with the list
	mixed := func(n int) string { return strings.Repeat("{'a': [", n/2) + strings.Repeat("]}", n/2) }
	for _, tc := range []struct {
		name string
		in   string
		ok   bool
	}{
		{"MaxDepth lists", deep(validation.MaxDepth), true},
		{"MaxDepth+1 lists", deep(validation.MaxDepth + 1), false},
		{"MaxDepth dicts and lists", mixed(validation.MaxDepth), true},
		{"MaxDepth+2 dicts and lists", mixed(validation.MaxDepth + 2), false},
		{"MaxValues values", wide(validation.MaxValues), true},
		{"MaxValues+1 values", wide(validation.MaxValues + 1), false},
		{"a million levels", deep(1_000_000), false},
	} {
		if _, ok := parsePython(tc.in); ok != tc.ok {
			t.Errorf("%s: parsePython ok = %v, want %v", tc.name, ok, tc.ok)
		}
	}
}

// measureValue returns how many values v holds (itself, members and
// elements at any depth) and how deep its arrays and objects nest.
func measureValue(v any) (values, depth int) {
	switch x := v.(type) {
	case []any:
		d := 0
		for _, e := range x {
			n, ed := measureValue(e)
			values += n
			d = max(d, ed)
		}
		return values + 1, d + 1
	case map[string]any:
		d := 0
		for _, e := range x {
			n, ed := measureValue(e)
			values += n
			d = max(d, ed)
		}
		return values + 1, d + 1
	}
	return 1, 0
}

// FuzzParsePython: the parser never panics; what it accepts is a list or a
// dict of JSON values within validation's limits, which encodes as JSON and
// decodes back the same; and text that is also JSON decodes as
// encoding/json decodes it.
func FuzzParsePython(f *testing.F) {
	for _, tc := range pythonCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, ok := parsePython(in)
		if !ok {
			if v != nil {
				t.Fatalf("parsePython(%q) = %v, false: a value with a refusal", in, v)
			}
			return
		}
		switch v.(type) {
		case []any, map[string]any:
		default:
			t.Fatalf("parsePython(%q) = %#v: not a list or a dict", in, v)
		}
		if values, depth := measureValue(v); values > validation.MaxValues || depth > validation.MaxDepth {
			t.Fatalf("parsePython(%q): %d values %d deep, beyond validation's limits", in, values, depth)
		}
		b, err := exactjson.Encode(v)
		if err != nil {
			t.Fatalf("parsePython(%q) = %#v, which does not encode: %v", in, v, err)
		}
		back, err := exactjson.Decode(b)
		if err != nil || !reflect.DeepEqual(back, v) {
			t.Fatalf("parsePython(%q) = %#v, encoded %s, decodes back as %#v (%v)", in, v, b, back, err)
		}
		if json.Valid([]byte(in)) {
			want, err := exactjson.Decode([]byte(in))
			if err != nil || !reflect.DeepEqual(v, want) {
				t.Fatalf("parsePython(%q) = %#v; encoding/json reads %#v (%v)", in, v, want, err)
			}
		}
	})
}

// TestParsePythonAgreesWithPython runs Python's ast.literal_eval on the
// table and on 3,000 generated literals (quotes, escapes, numbers and
// nesting drawn at random): wherever parsePython accepts a text, Python
// reads the same value. It needs python3 and skips without it.
func TestParsePythonAgreesWithPython(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found: the Python reference is not checked")
	}
	var inputs []string
	for _, tc := range pythonCases {
		inputs = append(inputs, tc.in)
	}
	rng := rand.New(rand.NewPCG(30, 30))
	for range 3000 {
		inputs = append(inputs, genPython(rng, 0))
	}
	var batch []string
	for _, in := range inputs {
		if utf8.ValidString(in) && !strings.ContainsRune(in, 0) {
			batch = append(batch, in)
		}
	}
	stdin, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", pythonReference)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var results []json.RawMessage // null: Python refused the text
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(batch) {
		t.Fatalf("python3 answered %d results for %d inputs (%v)", len(results), len(batch), err)
	}
	accepted, both, stricter := 0, 0, 0
	for i, in := range batch {
		got, ok := parsePython(in)
		if !ok {
			if r := string(results[i]); strings.HasPrefix(r, `{"l"`) || strings.HasPrefix(r, `{"d"`) {
				stricter++ // a list or dict to Python that parsePython refuses: allowed
			}
			continue
		}
		accepted++
		if string(results[i]) == "null" {
			t.Errorf("parsePython(%q) = %v; Python refuses it", in, got)
			continue
		}
		var want any
		if err := json.Unmarshal(results[i], &want); err != nil {
			t.Fatal(err)
		}
		if msg := samePython(got, want); msg != "" {
			t.Errorf("parsePython(%q) = %#v; Python reads %s: %s", in, got, results[i], msg)
			continue
		}
		both++
	}
	t.Logf("parsePython accepted %d of %d texts, Python read %d of them the same; %d more are a list or dict to Python",
		accepted, len(batch), both, stricter)
	if accepted < len(batch)/4 {
		t.Errorf("parsePython accepted only %d of %d generated texts: the generator no longer tests much", accepted, len(batch))
	}
}

// pythonReference reads a JSON list of texts and writes, for each, null
// when ast.literal_eval refuses it, else its value tagged by type:
// {"s": [code points]} (JSON would pair surrogate halves), {"i": "digits"}, {"f": "repr"}, {"b": bool}, {"n": 0},
// {"l": [...]}, {"d": [[key, value], ...]}, {"x": "type"} for anything else.
const pythonReference = `
import ast, json, sys
def tag(v):
    if v is None: return {"n": 0}
    if isinstance(v, bool): return {"b": v}
    if isinstance(v, int): return {"i": str(v)}
    if isinstance(v, float): return {"f": repr(v)}
    if isinstance(v, str): return {"s": [ord(c) for c in v]}
    if isinstance(v, list): return {"l": [tag(e) for e in v]}
    if isinstance(v, dict): return {"d": [[tag(k), tag(e)] for k, e in v.items()]}
    return {"x": type(v).__name__}
out = []
for text in json.load(sys.stdin):
    try:
        out.append(tag(ast.literal_eval(text)))
    except Exception:
        out.append(None)
json.dump(out, sys.stdout, ensure_ascii=True)
`

// samePython compares parsePython's value with Python's, tagged as
// pythonReference writes it; "" when they are the same.
func samePython(got, want any) string {
	w, _ := want.(map[string]any)
	if len(w) != 1 {
		return fmt.Sprintf("bad tag %v", want)
	}
	for tag, wv := range w {
		switch tag {
		case "n":
			if got != nil {
				return fmt.Sprintf("%#v is not None", got)
			}
		case "b":
			if got != wv {
				return fmt.Sprintf("%#v is not %v", got, wv)
			}
		case "s":
			if s, ok := got.(string); !ok || !sameCodePoints(s, wv.([]any)) {
				return fmt.Sprintf("%q is not the code points %v", got, wv)
			}
		case "i":
			n, ok := got.(json.Number)
			a, okA := new(big.Int).SetString(string(n), 10)
			b, okB := new(big.Int).SetString(wv.(string), 10)
			if !ok || !okA || !okB || a.Cmp(b) != 0 {
				return fmt.Sprintf("%#v is not the int %v", got, wv)
			}
		case "f":
			n, ok := got.(json.Number)
			a, errA := strconv.ParseFloat(string(n), 64)
			b, errB := strconv.ParseFloat(wv.(string), 64)
			if !ok || errA != nil || errB != nil || a != b {
				return fmt.Sprintf("%#v is not the float %v", got, wv)
			}
		case "l":
			g, ok := got.([]any)
			ws := wv.([]any)
			if !ok || len(g) != len(ws) {
				return fmt.Sprintf("%#v is not a list of %d", got, len(ws))
			}
			for i := range g {
				if msg := samePython(g[i], ws[i]); msg != "" {
					return fmt.Sprintf("[%d]: %s", i, msg)
				}
			}
		case "d":
			g, ok := got.(map[string]any)
			ws := wv.([]any)
			if !ok || len(g) != len(ws) {
				return fmt.Sprintf("%#v is not a dict of %d", got, len(ws))
			}
			for _, kv := range ws {
				pair := kv.([]any)
				cps, isStr := pair[0].(map[string]any)["s"].([]any)
				if !isStr {
					return fmt.Sprintf("key %v is not a str", pair[0])
				}
				var k []rune
				for _, c := range cps {
					k = append(k, rune(c.(float64)))
				}
				e, found := g[string(k)]
				if !found || !sameCodePoints(string(k), cps) {
					return fmt.Sprintf("no key %v", cps)
				}
				if msg := samePython(e, pair[1]); msg != "" {
					return fmt.Sprintf("[%q]: %s", string(k), msg)
				}
			}
		default:
			return fmt.Sprintf("Python read a %v", wv)
		}
	}
	return ""
}

// sameCodePoints reports whether s is the code points cps (JSON numbers).
func sameCodePoints(s string, cps []any) bool {
	rs := []rune(s)
	if len(rs) != len(cps) {
		return false
	}
	for i, r := range rs {
		if float64(r) != cps[i].(float64) {
			return false
		}
	}
	return true
}

// genPython writes a random list or dict literal (or, below the top, any
// literal), with the quotes, escapes, numbers and blanks models and repr()
// write, and some that neither does.
func genPython(rng *rand.Rand, depth int) string {
	kind := rng.IntN(10)
	if depth == 0 {
		kind = rng.IntN(2)
	} else if depth > 4 {
		kind = 2 + rng.IntN(8)
	}
	blank := func() string { return []string{"", "", " ", "\n", "\t"}[rng.IntN(5)] }
	switch kind {
	case 0:
		var b strings.Builder
		b.WriteByte('[')
		n := rng.IntN(4)
		for i := range n {
			if i > 0 {
				b.WriteString("," + blank())
			}
			b.WriteString(genPython(rng, depth+1))
		}
		if n > 0 && rng.IntN(5) == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(']')
		return b.String()
	case 1:
		var b strings.Builder
		b.WriteByte('{')
		n := rng.IntN(4)
		for i := range n {
			if i > 0 {
				b.WriteString("," + blank())
			}
			b.WriteString(genString(rng) + ":" + blank() + genPython(rng, depth+1))
		}
		b.WriteByte('}')
		return b.String()
	case 2, 3, 4:
		return genString(rng)
	case 5, 6:
		return []string{"0", "-0", "7", "-12", "3.25", "1e3", "2E-2", "-0.0", "1.5e300", "1e308", "9007199254740993",
			"123456789012345678901234567890", "0.1", "1e-320", "4.9e-324"}[rng.IntN(15)]
	case 7:
		return []string{"True", "False", "None"}[rng.IntN(3)]
	case 8:
		return []string{"true", "null", "1_0", "0x1", "01", "(1)", "-1j", "1e999"}[rng.IntN(8)]
	}
	return genString(rng)
}

// genString writes a random string literal in single or double quotes.
func genString(rng *rand.Rand) string {
	quote := []string{"'", `"`}[rng.IntN(2)]
	parts := []string{"a", "M", "é", "😀", " ", "'", `"`, `\\`, `\n`, `\t`, `\r`, `\b`, `\f`, `\a`, `\v`, `\0`, `\07`, `\101`,
		`\x41`, `\xe9`, `\u00e9`, `\u2028`, `\U0001F600`, `\'`, `\"`, `\/`, `\d`, `\ud800`, `\ud83d\ude00`, `\N{BULLET}`, "\u00a0"}
	var b strings.Builder
	b.WriteString(quote)
	for range rng.IntN(5) {
		p := parts[rng.IntN(len(parts))]
		if p == quote {
			p = `\` + p
		}
		b.WriteString(p)
	}
	b.WriteString(quote)
	return b.String()
}
