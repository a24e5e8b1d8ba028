package httpguard

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// deepJSON is a schema nested past encoding/json's depth limit.
var deepJSON = `{"type":"object","properties":{"x":{"default":` + strings.Repeat("[", maxSchemaDepth+1) + strings.Repeat("]", maxSchemaDepth+1) + `}}}`

// A tool whose schema cannot be read (nested past encoding/json's depth)
// or converted (a Gemini parameters the converter refuses) costs its own
// calls only: the request's other tool is guarded (its invalid call is
// re-asked); the tool's own call is refused with invalid_tool_schema under
// fail closed and passes with a schema_error event under fail open.
func TestUnusableToolSchemaCostsItsOwnCalls(t *testing.T) {
	t.Parallel()
	const weather = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	for _, tc := range []struct {
		name, path, body string
	}{
		{"anthropic/deep input_schema", "/v1/messages", `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"Weather?"}],
			"tools":[{"name":"get_weather","input_schema":` + weather + `},{"name":"odd","input_schema":` + deepJSON + `}]}`},
		{"gemini/deep parametersJsonSchema", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"Weather?"}]}],
			"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":` + weather + `},{"name":"odd","parametersJsonSchema":` + deepJSON + `}]}]}`},
		{"gemini/deep parameters", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"Weather?"}]}],
			"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":` + weather + `}]},{"function_declarations":[{"name":"odd","parameters":` + deepJSON + `}]}]}`},
		{"gemini/null property", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"Weather?"}]}],
			"tools":[{"functionDeclarations":[{"name":"odd","parameters":{"type":"OBJECT","properties":{"x":null}}},{"name":"get_weather","parametersJsonSchema":` + weather + `}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := recognise(http.MethodPost, tc.path)

			// The other tool is guarded: its invalid call is re-asked.
			srv := fp.New(fp.Reply(fp.Call("get_weather", `{"city": 42}`)), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
			defer srv.Close()
			ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+tc.path, []byte(tc.body))
			if n := len(srv.Requests()); n != 2 || ex.resp.StatusCode != http.StatusOK {
				t.Fatalf("%d upstream requests, status %d, want 2 (a re-ask) and 200: %.300s", n, ex.resp.StatusCode, ex.body)
			}
			if calls := callsOf(t, w, ex.body); len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
				t.Errorf("the client reads %+v, want the corrected call", calls)
			}
			if reask := srv.Requests()[1].Body; !strings.Contains(string(reask), `"odd"`) || len(reask) < len(tc.body) {
				t.Errorf("the re-ask lost the odd tool: %.300s", reask)
			}

			// The tool's own call, fail closed: refused as its schema is.
			bad := fp.Reply(fp.Call("odd", `{"x":1}`))
			srv = fp.New(bad, bad)
			defer srv.Close()
			ex = do(t, New(nil, ToolArgValidation(guard.WithFailClosed())), context.Background(), srv.URL+tc.path, []byte(tc.body))
			typ := ""
			if ex.resp.StatusCode != http.StatusOK {
				typ, _ = errorType(t, w, ex.body)
			}
			if ex.resp.StatusCode != http.StatusUnprocessableEntity || typ != "invalid_tool_schema" {
				t.Errorf("fail closed: %d %.300s, want 422 invalid_tool_schema", ex.resp.StatusCode, ex.body)
			}

			// Fail open: the call passes, with a schema_error event.
			var mu sync.Mutex
			var evs []guard.Event
			tr := New(nil, ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) {
				mu.Lock()
				defer mu.Unlock()
				evs = append(evs, e)
			})))
			ex = do(t, tr, context.Background(), srv.URL+tc.path, []byte(tc.body))
			if ex.resp.StatusCode != http.StatusOK {
				t.Fatalf("fail open: %d %.300s, want the call through", ex.resp.StatusCode, ex.body)
			}
			if calls := callsOf(t, w, ex.body); len(calls) != 1 || calls[0].Name != "odd" || !sameJSON(calls[0].Args, []byte(`{"x":1}`)) {
				t.Errorf("fail open: the client reads %+v, want the odd call as sent", calls)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(evs) != 1 || evs[0].Kind != guard.EventSchemaError || evs[0].Tool != "odd" {
				t.Errorf("fail open: events %+v, want one schema_error for odd", evs)
			}
		})
	}
}

// A count Gemini's proto reads as an int64 may be written as a number
// with a fraction or an exponent that is an integer all the same (3.0,
// 3e0), as it is in JSON Schema: it is converted, not refused, and the
// tool is guarded by it. A fraction that is not an integer, or a count
// past int64, is refused (the tool's calls alone are then refused:
// TestUnusableToolSchemaCostsItsOwnCalls).
func TestGeminiIntegralCounts(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{`3.0`: `3`, `3e0`: `3`, `30e-1`: `3`, `0.3e1`: `3`, `"3.0"`: `3`, `-0.0`: `0`, `3`: `3`, `"3"`: `3`} {
		got, err := geminiSchemaToJSONSchema(json.RawMessage(`{"type":"ARRAY","maxItems":` + in + `}`))
		if err != nil || !sameJSON(got, []byte(`{"type":"array","maxItems":`+want+`}`)) {
			t.Errorf("maxItems %s: %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`3.5`, `3e-1`, `1e400`, `9223372036854775808.0`, `"3.x"`, `"1e99999999999"`, `"."`, `"-"`} {
		if got, err := geminiSchemaToJSONSchema(json.RawMessage(`{"type":"ARRAY","maxItems":` + in + `}`)); err == nil {
			t.Errorf("maxItems %s: %s, want an error", in, got)
		}
	}

	path := "/v1beta/models/gemini-2.5-flash:generateContent"
	body := `{"contents":[{"role":"user","parts":[{"text":"Tag it"}]}],"tools":[{"functionDeclarations":[{"name":"tag",
		"parameters":{"type":"OBJECT","properties":{"tags":{"type":"ARRAY","items":{"type":"STRING"},"maxItems":3.0}}}}]}]}`
	srv := fp.New(fp.Reply(fp.Call("tag", `{"tags":["a","b","c","d"]}`)), fp.Reply(fp.Call("tag", `{"tags":["a","b","c"]}`)))
	defer srv.Close()
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+path, []byte(body))
	if n := len(srv.Requests()); n != 2 || !strings.Contains(string(srv.Requests()[1].Body), "/tags") {
		t.Fatalf("%d upstream requests, want the call with four tags re-asked", n)
	}
	if calls := callsOf(t, geminiWire{}, ex.body); len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"tags":["a","b","c"]}`)) {
		t.Errorf("the client reads %+v, want the corrected call", calls)
	}
}
