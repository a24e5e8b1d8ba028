package httpguard

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// A tool whose parameters encoding/json cannot read (nested past its
// 10,000 levels) costs its own calls only: the request's other tools are
// guarded (an invalid call re-asked, the deep tool sent on unchanged), and
// under fail closed the deep tool's call is refused as a schema that does
// not compile; the limits still read the request's turns. Today the whole
// request passes unguarded.
func TestTransportResponsesUnreadableToolSchema(t *testing.T) {
	t.Parallel()
	deep := `{"type":"object","x":` + strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001) + `}`
	body := []byte(`{"model":"gpt-4o","input":"Weather in Paris?","tools":[` +
		`{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},` +
		`{"type":"function","name":"deep","parameters":` + deep + `}]}`)
	url := "/v1/responses"
	t.Run("reask", func(t *testing.T) {
		t.Parallel()
		srv := fp.New(fp.Reply(fp.Call("get_weather", `{"city": 42}`)), fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
		defer srv.Close()
		ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+url, body)
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d upstream requests, want 2 (the invalid call re-asked); the client read %d", len(reqs), ex.resp.StatusCode)
		}
		if !bytes.Contains(reqs[1].Body, []byte(deep)) || !bytes.Contains(reqs[1].Body, []byte("function_call_output")) {
			t.Errorf("the re-ask lost the deep tool or lacks the call's answer")
		}
		calls := callsOf(t, responsesWire{}, ex.body)
		if ex.resp.StatusCode != http.StatusOK || len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
			t.Errorf("the client read %d %+v, want the corrected call", ex.resp.StatusCode, calls)
		}
	})
	t.Run("fail closed", func(t *testing.T) {
		t.Parallel()
		srv := fp.New(fp.Reply(fp.Call("deep", `{}`)), fp.Reply(fp.Text("never")))
		defer srv.Close()
		ex := do(t, New(nil, ToolArgValidation(guard.WithFailClosed())), context.Background(), srv.URL+url, body)
		if typ, _ := errorType(t, responsesWire{}, ex.body); ex.resp.StatusCode != http.StatusUnprocessableEntity || typ != "invalid_tool_schema" {
			t.Errorf("the client read %d %q, want 422 invalid_tool_schema:\n%.300s", ex.resp.StatusCode, typ, ex.body)
		}
	})
	w, err := responsesWire{}.parseRequest(url, body)
	if err != nil || len(w.Tools) != 2 || w.Tools[0].Err != nil || w.Tools[1].Err == nil {
		t.Errorf("parseRequest = %+v, %v; want get_weather's schema and deep's error", w.Tools, err)
	}
	if got := (responsesWire{}).transcript(body); len(got) != 1 || got[0].Kind != guard.UserTurn {
		t.Errorf("transcript = %+v, want the user's turn", got)
	}
	if _, err := (responsesWire{}).parseRequest(url, []byte(`{"model":"m","input":`+strings.Repeat("[", 10_001)+strings.Repeat("]", 10_001)+`}`)); !errors.Is(err, errJSON) {
		t.Errorf("parseRequest of a deep input: %v, want errJSON", err)
	}
}
