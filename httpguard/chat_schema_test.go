package httpguard

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// chatDeepToolsRequest offers a tool "deep" whose parameters are nested 10,001
// levels (past encoding/json's limit) and get_weather.
func chatDeepToolsRequest() []byte {
	deep := `{"type":"object","properties":{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}}`
	return []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[` +
		`{"type":"function","function":{"name":"deep","parameters":` + deep + `}},` +
		`{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]}`)
}

// A tool whose schema cannot be read costs its own calls only: the other
// tool's invalid call is re-asked (fail open and fail closed); the bad
// tool's call is refused with invalid_tool_schema under fail closed and
// passes with a schema_error event under fail open.
func TestChatUnreadableToolSchemaCostsItsCallsOnly(t *testing.T) {
	t.Parallel()
	for _, closed := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail closed %v", closed), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var kinds []guard.EventKind
			opts := []guard.ValidationOption{guard.WithEventHandler(func(_ context.Context, e guard.Event) {
				mu.Lock()
				defer mu.Unlock()
				kinds = append(kinds, e.Kind)
			})}
			if closed {
				opts = append(opts, guard.WithFailClosed())
			}
			tr := New(nil, ToolArgValidation(opts...))
			srv := fp.New(fp.Reply(fp.Call("get_weather", `{"city": 42}`)), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
				fp.Reply(fp.Call("deep", `{"a": []}`)))
			defer srv.Close()
			ex := do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", chatDeepToolsRequest())
			calls := callsOf(t, chatWire{}, clientRead(t, wireCases(t)[0], ex))
			if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
				t.Errorf("the client reads %+v, want get_weather Paris", calls)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Fatalf("%d upstream requests, want 2 (a re-ask)", n)
			}
			if reask := srv.Requests()[1].Body; !bytes.HasPrefix(reask, chatDeepToolsRequest()[:len(`{"model":"gpt-4o","messages":[`)]) ||
				!bytes.Contains(reask, chatDeepToolsRequest()[bytes.Index(chatDeepToolsRequest(), []byte(`,"tools"`)):]) {
				t.Errorf("the re-ask does not carry the request's tools as they were")
			}
			ex = do(t, tr, context.Background(), srv.URL+"/v1/chat/completions", chatDeepToolsRequest())
			typ, _ := errorType(t, chatWire{}, ex.body)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case closed && (ex.resp.StatusCode != http.StatusUnprocessableEntity || typ != "invalid_tool_schema"):
				t.Errorf("the deep tool's call: %d %q: %.300s; want 422 invalid_tool_schema", ex.resp.StatusCode, typ, ex.body)
			case !closed && (ex.resp.StatusCode != http.StatusOK || !chatHasKind(kinds, guard.EventSchemaError)):
				t.Errorf("the deep tool's call: %d, events %v; want 200 and a schema_error event", ex.resp.StatusCode, kinds)
			}
		})
	}
}

func chatHasKind(kinds []guard.EventKind, k guard.EventKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}
