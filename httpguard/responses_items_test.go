package httpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// responsesOtherItems are output items of every known type that is not a
// function call, as a coding agent's answer holds them beside its
// function calls: calls of tools the client runs, then tools OpenAI runs.
var responsesOtherItems = []string{
	`{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"enc1"}`,
	`{"id":"cu_1","type":"computer_call","call_id":"call_cu","action":{"type":"screenshot"},"pending_safety_checks":[],"status":"completed"}`,
	`{"id":"ctc_1","type":"custom_tool_call","call_id":"call_ctc","name":"apply_diff","input":"*** Begin Patch"}`,
	`{"id":"sh_1","type":"shell_call","call_id":"call_sh","action":{"commands":["ls"],"timeout_ms":null,"max_output_length":null},"status":"completed"}`,
	`{"id":"ap_1","type":"apply_patch_call","call_id":"call_ap","operation":{"type":"update_file","path":"a.go","diff":"@@"},"status":"completed"}`,
	`{"id":"ls_1","type":"local_shell_call","call_id":"call_ls","action":{"type":"exec","command":["ls"],"env":{}},"status":"completed"}`,
	`{"id":"mcp_1","type":"mcp_call","server_label":"deepwiki","name":"ask","arguments":"{}","output":"ok"}`,
	`{"id":"mcpl_1","type":"mcp_list_tools","server_label":"deepwiki","tools":[]}`,
	`{"id":"ig_1","type":"image_generation_call","status":"completed","result":"aGk="}`,
	`{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"weather"}}`,
	`{"id":"fs_1","type":"file_search_call","status":"completed","queries":["q"],"results":null}`,
	`{"id":"ci_1","type":"code_interpreter_call","status":"completed","code":"1+1","container_id":"c","outputs":null}`,
	`{"id":"sh_2","type":"shell_call","call_id":"call_sh2","action":{"commands":["pwd"]},"status":"completed"}`,
	`{"id":"sho_2","type":"shell_call_output","call_id":"call_sh2","output":[{"stdout":"/","stderr":"","outcome":{"type":"exit","exit_code":0}}]}`,
	`{"id":"rs_3","type":"reasoning","summary":[],"encrypted_content":"enc3"}`,
	`{"id":"mcpr_1","type":"mcp_approval_request","server_label":"deepwiki","name":"ask","arguments":"{}"}`,
	`{"id":"rs_2","type":"reasoning","summary":[]}`,
	`{"id":"cu_2","type":"computer_call","call_id":"call_cu2","action":{"type":"screenshot"},"pending_safety_checks":[],"status":"completed"}`,
}

// responsesMixed is a Responses answer whose output holds the function
// call fc (an item's JSON) after responsesOtherItems.
func responsesMixed(fc string) string {
	return `{"id":"resp_1","object":"response","status":"completed","model":"gpt-4o","output":[` +
		strings.Join(append(append([]string(nil), responsesOtherItems...), fc), ",") +
		`],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`
}

func functionCallItem(args string) string {
	return `{"id":"fc_1","type":"function_call","call_id":"call_fc","name":"get_weather","arguments":` + string(marshalString(args)) + `,"status":"completed"}`
}

// A function call beside items of every other known type is read, and
// its cleaned arguments written back, as if it were alone: the other items
// are not guard calls and pass byte for byte. An item of a type the wire
// code does not know cannot be guarded.
func TestResponsesCallsBesideOtherItems(t *testing.T) {
	resp := []byte(responsesMixed(functionCallItem(`{"city": 42}`)))
	w := responsesWire{}
	calls, err := w.calls(resp)
	if err != nil || len(calls) != 1 || calls[0].ID != "call_fc" || calls[0].Name != "get_weather" || string(calls[0].Args) != `{"city": 42}` {
		t.Fatalf("calls = %+v, %v; want the function call alone", calls, err)
	}
	got, err := w.accept(resp, [][]byte{[]byte(`{"city":"Paris"}`)})
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	if want := responsesMixed(functionCallItem(`{"city":"Paris"}`)); string(got) != want {
		t.Errorf("accept =\n%s\nwant\n%s", got, want)
	}
	for _, typ := range []string{"program", "tool_search_call", "additional_tools", "a_type_from_next_year"} {
		resp := `{"output":[{"type":"` + typ + `","id":"x_1"},` + functionCallItem(`{}`) + `]}`
		if _, err := w.calls([]byte(resp)); !isUnguardable(err) {
			t.Errorf("calls(%s) = %v, want an unguardable error", resp, err)
		}
	}
}

// reaskInput reads the input items of a Responses re-ask.
func reaskInput(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var r struct{ Input []map[string]any }
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("re-ask: %v\n%s", err, body)
	}
	return r.Input
}

// checkNoUnansweredCall fails unless every call of a tool the client runs
// in input is followed by its output, no call is answered twice, no
// computer_call or mcp_approval_request is replayed (their outputs are a
// screenshot and a person's decision), and every reasoning item is
// followed by an item other than reasoning.
func checkNoUnansweredCall(t *testing.T, input []map[string]any) {
	t.Helper()
	outputs := map[string]int{}
	for _, it := range input {
		typ, _ := it["type"].(string)
		if strings.HasSuffix(typ, "_output") {
			id, _ := it["call_id"].(string)
			if typ == "local_shell_call_output" {
				id, _ = it["id"].(string)
			}
			outputs[strings.TrimSuffix(typ, "_output")+" "+id]++
		}
	}
	for i, it := range input {
		typ, _ := it["type"].(string)
		id, _ := it["call_id"].(string)
		switch typ {
		case "function_call", "custom_tool_call", "shell_call", "apply_patch_call", "local_shell_call":
			if n := outputs[typ+" "+id]; n != 1 {
				t.Errorf("input item %d, %s %s, has %d outputs, want 1", i, typ, id, n)
			}
		case "computer_call", "mcp_approval_request":
			t.Errorf("input item %d is a %s: the re-ask cannot answer it", i, typ)
		case "reasoning":
			if i+1 == len(input) || input[i+1]["type"] == "reasoning" {
				t.Errorf("input item %d is a reasoning item followed by nothing it led to", i)
			}
		}
	}
}

// A re-ask of an answer with calls of tools the client runs is a request
// OpenAI accepts: each such call is answered (a text saying it was not
// run, in its output's shape) unless the answer holds its output already,
// computer_call and mcp_approval_request are left out, with the reasoning
// that led only to them, and every other item is replayed as it came.
func TestResponsesReaskAnswersEveryCall(t *testing.T) {
	req := []byte(`{"model":"gpt-4o","input":[{"role":"user","content":"fix it"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`)
	resp := []byte(responsesMixed(functionCallItem(`{"city": 42}`)))
	body, err := responsesWire{}.reask(req, resp, []wireAnswer{{Content: "city: want string"}})
	if err != nil {
		t.Fatal(err)
	}
	input := reaskInput(t, body)
	checkNoUnansweredCall(t, input)
	var types []string
	for _, it := range input {
		typ, _ := it["type"].(string)
		types = append(types, typ)
	}
	// The user message (no type), then the items replayed, then the outputs
	// in the order of their calls (call_sh2's came with the answer).
	want := []string{"", "reasoning", "custom_tool_call", "shell_call", "apply_patch_call", "local_shell_call", "mcp_call", "mcp_list_tools",
		"image_generation_call", "web_search_call", "file_search_call", "code_interpreter_call", "shell_call", "shell_call_output",
		"reasoning", "function_call",
		"custom_tool_call_output", "shell_call_output", "apply_patch_call_output", "local_shell_call_output", "function_call_output"}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Errorf("re-ask input types\n%q\nwant\n%q", types, want)
	}
	if bytes.Contains(body, []byte("enc3")) || !bytes.Contains(body, []byte("enc1")) {
		t.Errorf("the re-ask must leave out rs_3, which led only to an mcp_approval_request, and keep rs_1:\n%s", body)
	}
	if !strings.Contains(string(body), `"output":"city: want string"`) || !strings.Contains(string(body), notRun) {
		t.Errorf("the re-ask lacks the function call's answer or the other calls' not-run outputs:\n%s", body)
	}
}

// Through the transport, an invalid function call beside calls of other
// tools is caught and re-asked (today's defect: the whole answer passed
// unguarded); the re-ask holds no unanswered call; the client reads the
// accepted answer. Under fail closed it is refused. ToolCallLimit counts
// the function calls only.
func TestTransportResponsesCallBesideOtherCalls(t *testing.T) {
	t.Parallel()
	c := wireCases(t)[2] // openai-responses/sync
	if c.name != "openai-responses/sync" {
		t.Fatalf("case %s", c.name)
	}
	raw := func(body string) fp.Step {
		return fp.Handle(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		})
	}
	bad, good := responsesMixed(functionCallItem(`{"city": 42}`)), responsesMixed(functionCallItem(`{"city": "Paris"}`))

	t.Run("reask", func(t *testing.T) {
		srv := fp.New(raw(bad), raw(good))
		defer srv.Close()
		ex := do(t, New(nil, ToolArgValidation()), context.Background(), srv.URL+c.url, c.body)
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d upstream requests, want 2 (the invalid call re-asked); the client read %d:\n%.300s", len(reqs), ex.resp.StatusCode, ex.body)
		}
		checkNoUnansweredCall(t, reaskInput(t, reqs[1].Body))
		if ex.resp.StatusCode != http.StatusOK || string(ex.body) != good {
			t.Errorf("the client read %d:\n%s\nwant the second answer as it came", ex.resp.StatusCode, ex.body)
		}
	})
	t.Run("fail closed", func(t *testing.T) {
		srv := fp.New(raw(bad), raw(bad))
		defer srv.Close()
		ex := do(t, New(nil, ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed())), context.Background(), srv.URL+c.url, c.body)
		if typ, _ := errorType(t, c.w, ex.body); ex.resp.StatusCode != http.StatusUnprocessableEntity || typ != "invalid_tool_calls" {
			t.Errorf("the client read %d %q, want 422 invalid_tool_calls:\n%.300s", ex.resp.StatusCode, typ, ex.body)
		}
	})
	t.Run("limit", func(t *testing.T) {
		srv := fp.New(raw(good))
		defer srv.Close()
		tr := New(nil, ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError)), ToolArgValidation())
		ex := do(t, tr, context.Background(), srv.URL+c.url, c.body)
		if ex.resp.StatusCode != http.StatusOK || string(ex.body) != good {
			t.Errorf("one function call beside eight other calls under a limit of one: %d\n%.300s\nwant the answer", ex.resp.StatusCode, ex.body)
		}
	})
}
