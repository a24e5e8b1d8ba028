package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// requestProtocols are the protocols whose parseRequest reads a request
// by hand (request_decode.go): the fixture directory, a path the
// protocol recognises, and where its tool schemas are.
var requestProtocols = []struct {
	name, dir, path string
	w               wireProtocol
	schemas         schemaFinder
}{
	{"Chat", "openai-chat", "/v1/chat/completions", chatWire{}, functionSchemas},
	{"Responses", "openai-responses", "/v1/responses", responsesWire{}, responsesSchemas},
	{"Messages", "anthropic", "/v1/messages", messagesWire{}, messagesSchemas},
	{"Gemini", "gemini", "/v1beta/models/gemini-2.5-flash:generateContent", geminiWire{}, geminiSchemas},
	{"Ollama", "ollama", "/api/chat", ollamaWire{}, functionSchemas},
	{"Bedrock", "bedrock", "/model/us.anthropic.claude-sonnet-4-v1%3A0/converse", bedrockWire{}, bedrockSchemas},
}

// requestFixtures returns the request bodies recorded for the protocol
// in dir: request*.json, stream-request.json, and reask.json (a request
// the guard builds).
func requestFixtures(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, pattern := range []string{"request*.json", "stream-request.json", "reask.json"} {
		names, err := filepath.Glob(filepath.Join(wireDir, dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(name)] = b
		}
	}
	if len(out) < 2 {
		t.Fatalf("%s: %d request fixtures", dir, len(out))
	}
	return out
}

// readsFast reports whether w's hand decoder reads body itself, without
// leaving it to encoding/json.
func readsFast(w wireProtocol, body []byte) bool {
	var ok bool
	switch w.(type) {
	case chatWire:
		_, ok = decodeChatRequest(body)
	case ollamaWire:
		_, ok = decodeOllamaChatRequest(body)
	case messagesWire:
		_, ok = decodeMessagesRequest(body)
	case responsesWire:
		_, ok = decodeResponsesRequest(body)
	case geminiWire:
		_, ok = decodeGeminiRequest(body)
	case bedrockWire:
		_, ok = decodeBedrockConverseRequest(body)
	}
	return ok
}

// checkSameRequest fails t unless w.parseRequest reads body exactly as
// the oracle (parseRequest by json.Unmarshal, request_oracle_test.go)
// does: the same wireRequest, and the same error or none.
func checkSameRequest(t testing.TB, w wireProtocol, path string, body []byte) {
	t.Helper()
	got, gotErr := w.parseRequest(path, body)
	want, wantErr := oracleParseRequest(w, path, body)
	if !sameError(gotErr, wantErr) {
		t.Fatalf("%s.parseRequest(%.300q) error = %v, oracle %v", w.name(), body, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s.parseRequest(%.300q) = %+v, oracle %+v", w.name(), body, got, want)
	}
}

// sameError reports whether a and b are both nil, or say the same and
// are of the same kinds.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	for _, kind := range []error{errJSON, errUnsupported} {
		if errors.Is(a, kind) != errors.Is(b, kind) {
			return false
		}
	}
	return a.Error() == b.Error() && isUnguardable(a) == isUnguardable(b) && isUpstreamError(a) == isUpstreamError(b)
}

// requestEdgeCases returns bodies made from body (a request of the
// protocol p, whose schemas it finds with schemas): for every member of
// every object in it, the key in another case, folded by the long s or
// the Kelvin sign, escaped, or given twice; the value replaced by one of
// every kind (and by null, escapes, invalid UTF-8, numbers no int holds);
// the member dropped. Then the body indented, its schemas nested past
// encoding/json's limit, its conversation nested past it, and grown
// large.
func requestEdgeCases(t testing.TB, body []byte, schemas schemaFinder) [][]byte {
	t.Helper()
	var out [][]byte
	add := func(edits ...edit) { out = append(out, apply(body, edits...)) }
	values := []string{`null`, `0`, `1`, `2`, `-1`, `2.5`, `1e2`, `99999999999999999999`, `"x"`, `""`,
		`"function"`, `"func\u0074ion"`, `"custom"`, `"namespace"`, `"\u0041\ud83d\ude00"`, "\"\xff\"", `"\ud800"`,
		`true`, `false`, `[]`, `{}`, `[null]`, `[1]`, `["x"]`, `[{}]`, `[{"type":"function"}]`, `{"id":"c"}`,
		`[{"type":"tool_search_output","tools":[{"type":"function","name":"t","parameters":{}}]}]`}
	var walk func(sp span)
	walk = func(sp span) {
		switch kind(body, sp) {
		case '[':
			es, err := arrayElems(body, sp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				walk(e)
			}
		case '{':
			ms, err := objectMembers(body, sp)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				k, v := raw(body, m.k), raw(body, m.v)
				for _, key := range otherSpellings(m.key) {
					add(edit{at: m.k, text: []byte(key)})
				}
				dup := []byte("," + string(k) + ":")
				add(edit{at: span{m.v.end, m.v.end}, text: append(dup, v...)})
				add(edit{at: span{m.v.end, m.v.end}, text: append(dup, "null"...)})
				add(edit{at: span{m.k.start, m.k.start}, text: append(append([]byte(nil), dup[1:]...), `null,`...)})
				if kind(body, m.v) == '{' {
					add(edit{at: span{m.v.end, m.v.end}, text: append(dup, `{"name":"z"}`...)})
				}
				for _, r := range values {
					add(edit{at: m.v, text: []byte(r)})
				}
				if next := skipSpace(body, m.v.end); next < len(body) && body[next] == ',' {
					add(edit{at: span{m.k.start, skipSpace(body, next+1)}})
				}
				walk(m.v)
			}
		}
	}
	r, err := root(body)
	if err != nil {
		t.Fatal(err)
	}
	walk(r)

	var indented bytes.Buffer
	if err := json.Indent(&indented, body, "\r\n", "\t"); err != nil {
		t.Fatal(err)
	}
	out = append(out, indented.Bytes(), append([]byte(" \t\n"), append(body, " \n"...)...))

	deep := strings.Repeat(`{"a":`, maxSchemaDepth) + `1` + strings.Repeat(`}`, maxSchemaDepth)
	sps, err := schemas(body, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range sps {
		add(edit{at: sp, text: []byte(deep)})
	}
	if len(sps) > 0 {
		add(edit{at: sps[0], text: []byte(`"\u0000toolguard: schema nested too deep"`)})
	}
	for _, list := range []string{"messages", "contents", "input"} {
		if v, ok, _ := requestField(body, r, list); ok && kind(body, v) == '[' {
			add(edit{at: v, text: []byte(`[` + deep + `]`)})
			big := `[` + strings.Repeat(`{"role":"user","content":"`+strings.Repeat("long text ", 100)+`"},`, 2000) + `{}]`
			add(edit{at: v, text: []byte(big)})
		}
	}
	if v, ok, _ := requestField(body, r, "tools"); ok && kind(body, v) == '[' {
		tools := raw(body, v)
		many := bytes.Repeat(append(append([]byte(nil), tools[1:len(tools)-1]...), ','), 200)
		add(edit{at: v, text: append(append([]byte{'['}, many...), tools[1:]...)})
	}
	return out
}

// otherSpellings returns key as encoding/json also matches it to a
// field named key, and as it does not: another case, a long s or a
// Kelvin sign for an s or a k, escapes, a key one letter longer.
func otherSpellings(key string) []string {
	var out []string
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	if key != "" {
		r, n := utf8.DecodeRuneInString(key)
		out = append(out, q(string(unicode.ToUpper(r))+key[n:]), q(strings.ToUpper(key)))
		out = append(out, `"\u00`+hexByte(key[0])+key[1:]+`"`)
		out = append(out, `"`+key[:len(key)-1]+`\u00`+hexByte(key[len(key)-1])+`"`)
	}
	for _, f := range []struct{ from, to string }{{"s", "ſ"}, {"k", "\u212a"}, {"S", "ſ"}, {"K", "\u212a"}} {
		if strings.Contains(key, f.from) {
			out = append(out, q(strings.Replace(key, f.from, f.to, 1)))
		}
	}
	return append(out, q(key+"x"), q("x"+key), q(key+"\x00"), "\""+key+"\xff\"")
}

// hexByte is c in two lower-case hex digits.
func hexByte(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// Every request the SDKs send, and the guard's re-asks, are read by
// hand, not left to encoding/json; and the schemas read are not slices of
// the body, whose bytes may go (or be overwritten) while they stay.
func TestParseRequestReadsFixturesByHand(t *testing.T) {
	for _, p := range requestProtocols {
		for name, fixture := range requestFixtures(t, p.dir) {
			if !readsFast(p.w, fixture) {
				t.Errorf("%s %s: left to encoding/json", p.dir, name)
			}
			body := bytes.Clone(fixture)
			req, err := p.w.parseRequest(p.path, body)
			if err != nil || len(req.Tools) == 0 {
				t.Fatalf("%s %s: parseRequest = %+v, %v", p.dir, name, req, err)
			}
			want, _ := p.w.parseRequest(p.path, fixture)
			clear(body)
			if !reflect.DeepEqual(req, want) {
				t.Errorf("%s %s: parseRequest = %+v, and once its body is cleared %+v", p.dir, name, want, req)
			}
			for _, tool := range req.Tools {
				if cap(tool.Schema) != len(tool.Schema) {
					t.Errorf("%s %s: the schema of %s has room past its end: %d bytes in %d", p.dir, name, tool.Name, len(tool.Schema), cap(tool.Schema))
				}
			}
		}
	}
}

// parseRequest reads every fixture, and every edge case made of one
// (requestEdgeCases), exactly as it did by json.Unmarshal; some of the
// cases by hand and some by encoding/json.
func TestParseRequestMatchesOracle(t *testing.T) {
	for _, p := range requestProtocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			var fast, slow int
			for _, body := range requestFixtures(t, p.dir) {
				checkSameRequest(t, p.w, p.path, body)
				for _, c := range requestEdgeCases(t, body, p.schemas) {
					checkSameRequest(t, p.w, p.path, c)
					if readsFast(p.w, c) {
						fast++
					} else {
						slow++
					}
				}
			}
			for _, c := range handMadeRequests {
				checkSameRequest(t, p.w, p.path, []byte(c))
			}
			if fast == 0 || slow == 0 {
				t.Errorf("%d cases read by hand, %d by encoding/json: want both", fast, slow)
			}
			t.Logf("%d cases read by hand, %d by encoding/json", fast, slow)
		})
	}
}

// handMadeRequests are bodies of every protocol's shape that
// requestEdgeCases does not make from a fixture.
var handMadeRequests = []string{
	``, ` `, `[]`, `{}`, `null`, `"x"`, `{"a":1}`, `not json`, `{"messages":[]`, `{"messages":[]}}`,
	`{"messages":[],"contents":[],"input":"x"}`,
	`{"messages":[],"contents":[],"input":[],"tools":[]}`,
	`{"messages":[],"contents":[],"input":[],"tools":null,"toolConfig":{"tools":null}}`,
	// Duplicates whose values encoding/json merges.
	`{"messages":[],"tools":[{"type":"function","function":{"name":"a"},"function":{"parameters":{"type":"object"}}}]}`,
	`{"messages":[],"tools":[{"type":"function","function":{"name":"a"}}],"tools":[{"function":{"parameters":{}}}]}`,
	`{"messages":[],"tools":[{"type":"function","function":{"name":"a"}}],"Tools":[{}]}`,
	`{"contents":[],"tools":[{"functionDeclarations":[{"name":"a"}],"function_declarations":[{"name":"b","parameters":{"type":"OBJECT"}}]}]}`,
	`{"contents":[],"generationConfig":{"candidateCount":1,"candidate_count":2}}`,
	`{"contents":[],"generationConfig":{"candidateCount":-9223372036854775808}}`,
	`{"contents":[],"generationConfig":{"candidateCount":9223372036854775808}}`,
	`{"contents":[],"generationConfig":{"candidateCount":-0}}`,
	`{"contents":[],"generationConfig":{"candidateCount":1.0}}`,
	`{"contents":[],"generationConfig":{"candidateCount":1E0}}`,
	`{"input":[],"conversation":"c","previous_response_id":"r","store":false}`,
	`{"conversation":{"id":"c","ID":"d"}}`,
	`{"conversation":7}`,
	`{"input":null}`,
	`{"previous_response_id":null,"conversation":null}`,
	`{"input":"x","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f","parameters":{}},{"type":"namespace","name":"in","tools":[{"type":"function","name":"g"}]}]}]}`,
	`{"input":"x","tools":[{"type":"function","name":"f","parameters":{}}],"tools":[{"type":"function","name":"g"}]}`,
	`{"messages":[],"thread":{"type":"continue","previous_message_id":"m"}}`,
	`{"messages":[],"thread":{}}`,
	`{"messages":[],"thread":null,"thread":{"type":"create"}}`,
	`{"messages":[],"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":{"json":{"type":"object"}}}},{"cachePoint":{}},null,{"toolSpec":null}]}}`,
	`{"messages":[],"toolConfig":{"tools":[{"toolSpec":{"name":"a","inputSchema":null}},{"toolSpec":{"name":"b","inputSchema":{"json":null}}}]}}`,
	"{\"model\":\"m\xff\",\"messages\":[],\"tools\":[{\"type\":\"function\",\"name\":\"\\ud83d\",\"function\":{\"name\":\"a\\u0000b\",\"parameters\":{}}}]}",
	`{"model":"m","messages":[],"stream":true,"tools":[{"type":"","name":"t","input_schema":{}},{"type":"custom","name":"u"},{"type":"web_search_20250305","name":"w"}]}`,
	`{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":null}},{"function":{"name":"g"}}]}`,
}

// fuzzParseRequest holds p's parseRequest to the oracle on any body,
// starting from the fixtures and the edge cases made of them.
func fuzzParseRequest(f *testing.F, dir string) {
	for _, p := range requestProtocols {
		if p.dir != dir {
			continue
		}
		for _, body := range requestFixtures(f, p.dir) {
			f.Add(body)
			// One edge case in eight: TestParseRequestMatchesOracle reads
			// them all, and a corpus of thousands keeps the fuzzer
			// gathering its baseline instead of fuzzing.
			for i, c := range requestEdgeCases(f, body, p.schemas) {
				if i%8 == 0 && len(c) < 4096 {
					f.Add(c)
				}
			}
		}
		for _, c := range handMadeRequests {
			f.Add([]byte(c))
		}
		f.Fuzz(func(t *testing.T, body []byte) {
			checkSameRequest(t, p.w, p.path, body)
		})
		return
	}
	f.Fatalf("no protocol %s", dir)
}

func FuzzParseRequestChat(f *testing.F)      { fuzzParseRequest(f, "openai-chat") }
func FuzzParseRequestResponses(f *testing.F) { fuzzParseRequest(f, "openai-responses") }
func FuzzParseRequestMessages(f *testing.F)  { fuzzParseRequest(f, "anthropic") }
func FuzzParseRequestGemini(f *testing.F)    { fuzzParseRequest(f, "gemini") }
func FuzzParseRequestOllama(f *testing.F)    { fuzzParseRequest(f, "ollama") }
func FuzzParseRequestBedrock(f *testing.F)   { fuzzParseRequest(f, "bedrock") }

// BenchmarkParseRequest reads each protocol's recorded request.
func BenchmarkParseRequest(b *testing.B) {
	for _, p := range requestProtocols {
		body := requestFixtures(b, p.dir)["request.json"]
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := p.w.parseRequest(p.path, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzCheckObject holds checkObject, readableBody's check, to parseBody,
// whose span it does without: the same error or none.
func FuzzCheckObject(f *testing.F) {
	for _, s := range []string{``, ` `, `{}`, ` {"a":[1,{"b":null}]} `, `[]`, `"x"`, `1`, `{`, `{}}`, `{"a":1,}`, "{\"a\":\"\xff\"}", `nul`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, want := parseBody(b)
		if got := checkObject(b); !sameError(got, want) {
			t.Fatalf("checkObject(%q) = %v, parseBody %v", b, got, want)
		}
	})
}
