package httpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// Tool shapes of OpenAI Responses tool search (openai-go v3.98.0,
// responses.NamespaceToolParam, FunctionToolParam.DeferLoading,
// ResponseToolSearchOutputItemParam, ResponseFunctionToolCall.Namespace;
// OpenAI's guide "Tool search").
const (
	// ordersSchema needs a customer_id and nothing else.
	ordersSchema = `{"type":"object","properties":{"customer_id":{"type":"string"}},"required":["customer_id"],"additionalProperties":false}`
	// deferredOrders is a function the model loads through tool search.
	deferredOrders = `{"type":"function","name":"list_open_orders","description":"List open orders for a customer ID.","defer_loading":true,"parameters":` + ordersSchema + `}`
	// crmNamespace groups deferredOrders under the namespace crm.
	crmNamespace = `{"type":"namespace","name":"crm","description":"CRM tools for customer lookup and order management.","tools":[` + deferredOrders + `]}`
)

// responsesCall is a Responses answer whose one output item is a
// function_call of name (in namespace ns unless "") with args.
func responsesCall(ns, name, args string) string {
	item := map[string]any{"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1",
		"name": name, "arguments": args}
	if ns != "" {
		item["namespace"] = ns
	}
	b, _ := json.Marshal(map[string]any{"id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
		"model": "gpt-5.4", "output": []any{item}})
	return string(b)
}

// A function offered through Responses tool search is guarded like any
// other: a deferred function in the request's tools, a deferred function
// in a namespace (its call names the namespace in a field of its own), and
// a function a client-run tool search loaded (a tool_search_output item of
// the input, plain or in a namespace). Its bad call is re-asked and the
// client reads the corrected one.
func TestResponsesDeferredToolReasked(t *testing.T) {
	t.Parallel()
	user := `{"role":"user","content":"List open orders for customer CUST-12345."}`
	searched := `{"type":"tool_search_call","execution":"client","call_id":"call_s","status":"completed","arguments":{"goal":"orders"}}`
	for _, c := range []struct {
		name, body, ns string
	}{
		{"defer_loading function", `{"model":"gpt-5.4","input":[` + user + `],"tools":[` + deferredOrders + `,{"type":"tool_search"}],"parallel_tool_calls":false}`, ""},
		{"namespace", `{"model":"gpt-5.4","input":[` + user + `],"tools":[` + crmNamespace + `,{"type":"tool_search"}],"parallel_tool_calls":false}`, "crm"},
		{"client tool_search_output", `{"model":"gpt-5.4","input":[` + user + `,` + searched +
			`,{"type":"tool_search_output","execution":"client","call_id":"call_s","status":"completed","tools":[` + deferredOrders + `]}],` +
			`"tools":[{"type":"tool_search","execution":"client","description":"Find CRM tools.","parameters":{"type":"object","properties":{"goal":{"type":"string"}},"required":["goal"]}}],"parallel_tool_calls":false}`, ""},
		{"client tool_search_output namespace", `{"model":"gpt-5.4","input":[` + user + `,` + searched +
			`,{"type":"tool_search_output","execution":"client","call_id":"call_s","status":"completed","tools":[` + crmNamespace + `]}],` +
			`"tools":[{"type":"tool_search","execution":"client","description":"Find CRM tools.","parameters":{"type":"object","properties":{"goal":{"type":"string"}},"required":["goal"]}}],"parallel_tool_calls":false}`, "crm"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(fp.Raw(200, responsesCall(c.ns, "list_open_orders", `{"customer":"CUST-12345"}`)),
				fp.Raw(200, responsesCall(c.ns, "list_open_orders", `{"customer_id":"CUST-12345"}`)))
			defer srv.Close()
			var log kindLog
			tr := New(nil, ToolArgValidation(log.handler()))
			ex := do(t, tr, context.Background(), srv.URL+"/v1/responses", []byte(c.body), "Authorization", "Bearer sk-test")
			reqs := srv.Requests()
			if len(reqs) == 2 {
				t.Logf("re-ask the provider received:\n%s", reqs[1].Body)
			}
			t.Logf("the client read (%d):\n%s", ex.resp.StatusCode, ex.body)
			t.Logf("events: %v", log.count())
			if ex.resp.StatusCode != http.StatusOK {
				t.Fatalf("the client got %d: %s", ex.resp.StatusCode, ex.body)
			}
			calls := callsOf(t, responsesWire{}, ex.body)
			if len(calls) != 1 || calls[0].Name != namespacedName(c.ns, "list_open_orders") ||
				!sameJSON(calls[0].Args, []byte(`{"customer_id":"CUST-12345"}`)) {
				t.Errorf("the client reads %+v, want the corrected call", calls)
			}
			if len(reqs) != 2 {
				t.Fatalf("the provider got %d requests, want 2 (the bad call re-asked)", len(reqs))
			}
			sameExceptMessages(t, []byte(c.body), reqs[1].Body, "input")
			in := messagesOf(t, reqs[1].Body, "input")
			orig := messagesOf(t, []byte(c.body), "input")
			if len(in) != len(orig)+2 {
				t.Fatalf("the re-ask's input has %d items, want the %d sent, the call and its output:\n%s", len(in), len(orig), reqs[1].Body)
			}
			var call, output struct {
				Type      string `json:"type"`
				CallID    string `json:"call_id"`
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
				Output    string `json:"output"`
			}
			json.Unmarshal(in[len(orig)], &call)
			json.Unmarshal(in[len(orig)+1], &output)
			if call.Type != "function_call" || call.Name != "list_open_orders" || call.Namespace != c.ns {
				t.Errorf("the re-ask replays %s, want the model's call as it came", in[len(orig)])
			}
			if output.Type != "function_call_output" || output.CallID != "call_1" || !strings.Contains(output.Output, "customer_id") {
				t.Errorf("the re-ask's output is %s, want the feedback naming customer_id", in[len(orig)+1])
			}
			if n := log.count(); n[guard.EventInvalid] != 1 || n[guard.EventReask] != 1 || n[guard.EventUnknownTool] != 0 {
				t.Errorf("events %v, want one invalid, one reask, no unknown_tool", n)
			}
		})
	}
}

// A call of a tool neither offered nor deferred still follows the
// unknown-tool policy: a namespace's function called without its
// namespace, another namespace's function of the same name, a function
// no namespace holds. UnknownPass (the default) passes it as it came;
// UnknownReject re-asks it.
func TestResponsesDeferredUnknownStillUnknown(t *testing.T) {
	t.Parallel()
	body := `{"model":"gpt-5.4","input":[{"role":"user","content":"orders"}],"tools":[` + crmNamespace + `,{"type":"tool_search"}]}`
	for _, c := range []struct{ name, ns, tool string }{
		{"without its namespace", "", "list_open_orders"},
		{"another namespace", "billing", "list_open_orders"},
		{"not in the namespace", "crm", "delete_customer"},
	} {
		for _, reject := range []bool{false, true} {
			t.Run(c.name+map[bool]string{false: "/pass", true: "/reject"}[reject], func(t *testing.T) {
				t.Parallel()
				bad := responsesCall(c.ns, c.tool, `{"customer":"CUST-12345"}`)
				srv := fp.New(fp.Raw(200, bad), fp.Raw(200, responsesCall("crm", "list_open_orders", `{"customer_id":"CUST-12345"}`)))
				defer srv.Close()
				var log kindLog
				opts := []guard.ValidationOption{log.handler()}
				if reject {
					opts = append(opts, guard.WithUnknownTools(guard.UnknownReject))
				}
				tr := New(nil, ToolArgValidation(opts...))
				ex := do(t, tr, context.Background(), srv.URL+"/v1/responses", []byte(body))
				if ex.resp.StatusCode != http.StatusOK {
					t.Fatalf("the client got %d: %s", ex.resp.StatusCode, ex.body)
				}
				n := log.count()
				if n[guard.EventUnknownTool] != 1 {
					t.Errorf("events %v, want one unknown_tool", n)
				}
				reqs := len(srv.Requests())
				if !reject && (reqs != 1 || !sameJSON(ex.body, []byte(bad))) {
					t.Errorf("UnknownPass: the provider got %d requests and the client read %s, want 1 and the call as it came", reqs, ex.body)
				}
				if reject && (reqs != 2 || n[guard.EventReask] != 1) {
					t.Errorf("UnknownReject: the provider got %d requests, events %v, want the call re-asked", reqs, n)
				}
			})
		}
	}
}

// A request without tool search reads the same tools as before: a
// function, a custom tool and a tool OpenAI runs; only the function is a
// guarded tool, by its own name.
func TestResponsesToolsWithoutDeferredUnchanged(t *testing.T) {
	t.Parallel()
	body := `{"model":"gpt-4o","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"get_weather","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}],` +
		`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}},{"type":"custom","name":"apply_diff"},{"type":"web_search"}]}`
	w, err := responsesWire{}.parseRequest("", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Tools) != 1 || w.Tools[0].Name != "get_weather" || string(w.Tools[0].Schema) != `{"type":"object"}` || w.Tools[0].Err != nil {
		t.Errorf("tools %+v, want get_weather alone", w.Tools)
	}
}

// A tool loaded by two searches, or loaded and also listed in the
// request's tools, is one tool (no duplicate-name warning); a schema
// nested too deep inside a namespace or a tool_search_output refuses that
// tool only, as at the top level.
func TestResponsesDeferredToolsRead(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"items":`, maxSchemaDepth+1) + `{}` + strings.Repeat(`}`, maxSchemaDepth+1)
	out := func(tools string) string {
		return `{"type":"tool_search_output","execution":"client","call_id":"s","tools":[` + tools + `]}`
	}
	body := `{"model":"gpt-5.4","input":[{"role":"user","content":"x"},` + out(deferredOrders) + `,` + out(deferredOrders+`,`+crmNamespace) + `,` +
		out(`{"type":"namespace","name":"deep","description":"d","tools":[{"type":"function","name":"f","parameters":`+deep+`}]}`) + `],` +
		`"tools":[` + deferredOrders + `,{"type":"tool_search","execution":"client"}]}`
	w, err := responsesWire{}.parseRequest("", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range w.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, " ") != "list_open_orders crm.list_open_orders deep.f" {
		t.Fatalf("tools %q, want list_open_orders crm.list_open_orders deep.f", names)
	}
	if w.Tools[2].Err != errSchemaTooDeep || !sameJSON(w.Tools[1].Schema, []byte(ordersSchema)) {
		t.Errorf("tools %+v, want deep.f refused as too deep and crm.list_open_orders with its schema", w.Tools)
	}
}

// Anthropic's tool search: a deferred tool stays in the request's tools
// with "defer_loading": true and its input_schema, and the answer loads it
// with a tool_reference in a tool_search_tool_result before the tool_use
// (anthropic-sdk-go v2.15.0: ToolParam.DeferLoading,
// ToolSearchToolRegex20251119Param, ToolSearchToolResultBlock,
// ToolReferenceBlock). Its bad call is re-asked like any other.
func TestMessagesDeferredToolReasked(t *testing.T) {
	t.Parallel()
	body := `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"List open orders for customer CUST-12345."}],` +
		`"tools":[{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"},` +
		`{"name":"list_open_orders","description":"List open orders for a customer ID.","defer_loading":true,"input_schema":` + ordersSchema + `}]}`
	answer := func(input string) string {
		return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","stop_reason":"tool_use","content":[` +
			`{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_regex","input":{"query":"orders"}},` +
			`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"list_open_orders"}]}},` +
			`{"type":"tool_use","id":"toolu_1","name":"list_open_orders","input":` + input + `}],"usage":{"input_tokens":10,"output_tokens":5}}`
	}
	srv := fp.New(fp.Raw(200, answer(`{"customer":"CUST-12345"}`)), fp.Raw(200, answer(`{"customer_id":"CUST-12345"}`)))
	defer srv.Close()
	var log kindLog
	tr := New(nil, ToolArgValidation(log.handler()))
	ex := do(t, tr, context.Background(), srv.URL+"/v1/messages", []byte(body), "x-api-key", "sk-test", "anthropic-version", "2023-06-01")
	reqs := srv.Requests()
	if len(reqs) == 2 {
		t.Logf("re-ask the provider received:\n%s", reqs[1].Body)
	}
	t.Logf("the client read (%d):\n%s", ex.resp.StatusCode, ex.body)
	t.Logf("events: %v", log.count())
	calls := callsOf(t, messagesWire{}, ex.body)
	if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"customer_id":"CUST-12345"}`)) {
		t.Errorf("the client reads %+v, want the corrected call", calls)
	}
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2 (the bad call re-asked)", len(reqs))
	}
	if n := log.count(); n[guard.EventInvalid] != 1 || n[guard.EventReask] != 1 || n[guard.EventUnknownTool] != 0 {
		t.Errorf("events %v, want one invalid, one reask, no unknown_tool", n)
	}
}

// A hosted tool search's answer (tool_search_call and tool_search_output
// with "execution": "server", then the call of the loaded function) is
// guarded: the bad call is re-asked with the search replayed before it,
// and the client reads the corrected call. A client-run search
// ("execution": "client") passes to the client, which runs it; a re-ask
// of a call beside it leaves it out, as it leaves out a computer_call,
// since the guard cannot write the tools it loads; alone, it passes under
// fail closed as an answer without a call. A tool_search_call of
// an execution the guard does not know cannot be guarded.
func TestResponsesToolSearchAnswerGuarded(t *testing.T) {
	t.Parallel()
	body := `{"model":"gpt-5.4","input":[{"role":"user","content":"List open orders for customer CUST-12345."}],"tools":[` + crmNamespace + `,{"type":"tool_search"}]}`
	hostedSearch := `{"id":"tsc_1","type":"tool_search_call","execution":"server","call_id":null,"status":"completed","arguments":{"paths":["crm"]}},` +
		`{"id":"tso_1","type":"tool_search_output","execution":"server","call_id":null,"status":"completed","tools":[` + crmNamespace + `]}`
	clientSearch := `{"id":"tsc_1","type":"tool_search_call","execution":"client","call_id":"call_s","status":"completed","arguments":{"goal":"orders"}}`
	answer := func(before, args string) string {
		return `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5.4","output":[` + before +
			`{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","namespace":"crm","name":"list_open_orders","arguments":` +
			string(marshalString(args)) + `}]}`
	}
	for _, c := range []struct {
		name, before string
		replayed     []string // the types of the items the re-ask adds
	}{
		{"hosted", hostedSearch + ",", []string{"tool_search_call", "tool_search_output", "function_call", "function_call_output"}},
		{"client beside a call", clientSearch + ",", []string{"function_call", "function_call_output"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(fp.Raw(200, answer(c.before, `{"customer":"CUST-12345"}`)), fp.Raw(200, answer(c.before, `{"customer_id":"CUST-12345"}`)))
			defer srv.Close()
			var log kindLog
			tr := New(nil, ToolArgValidation(log.handler()))
			ex := do(t, tr, context.Background(), srv.URL+"/v1/responses", []byte(body))
			reqs := srv.Requests()
			if len(reqs) == 2 {
				t.Logf("re-ask the provider received:\n%s", reqs[1].Body)
			}
			t.Logf("the client read (%d):\n%s", ex.resp.StatusCode, ex.body)
			t.Logf("events: %v", log.count())
			calls := callsOf(t, responsesWire{}, ex.body)
			if len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"customer_id":"CUST-12345"}`)) {
				t.Errorf("the client reads %+v, want the corrected call", calls)
			}
			if len(reqs) != 2 {
				t.Fatalf("the provider got %d requests, want 2 (the bad call re-asked)", len(reqs))
			}
			in := reaskInput(t, reqs[1].Body)
			var types []string
			for _, it := range in[1:] {
				typ, _ := it["type"].(string)
				types = append(types, typ)
			}
			if strings.Join(types, " ") != strings.Join(c.replayed, " ") {
				t.Errorf("the re-ask adds %v, want %v", types, c.replayed)
			}
			if n := log.count(); n[guard.EventInvalid] != 1 || n[guard.EventReask] != 1 || n[guard.EventUnguarded] != 0 {
				t.Errorf("events %v, want one invalid, one reask, nothing unguarded", n)
			}
		})
	}
	t.Run("client search alone", func(t *testing.T) {
		t.Parallel()
		resp := `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5.4","output":[` + clientSearch + `]}`
		srv := fp.New(fp.Raw(200, resp))
		defer srv.Close()
		var log kindLog
		tr := New(nil, ToolArgValidation(log.handler(), guard.WithFailClosed()))
		ex := do(t, tr, context.Background(), srv.URL+"/v1/responses", []byte(body))
		t.Logf("the client read (%d):\n%s", ex.resp.StatusCode, ex.body)
		t.Logf("events: %v", log.count())
		if n := log.count(); ex.resp.StatusCode != http.StatusOK || !sameJSON(ex.body, []byte(resp)) || n[guard.EventUnguarded] != 0 || n[guard.EventGiveUp] != 0 {
			t.Errorf("fail closed, the client got %d %s, events %v; want the search as it came, nothing unguarded", ex.resp.StatusCode, ex.body, n)
		}
	})
	t.Run("execution unknown", func(t *testing.T) {
		t.Parallel()
		for _, exec := range []string{`"elsewhere"`, `null`, `7`} {
			resp := `{"output":[{"id":"tsc_1","type":"tool_search_call","execution":` + exec + `,"call_id":"s"},` + functionCallItem(`{}`) + `]}`
			if _, err := (responsesWire{}).calls([]byte(resp)); !isUnguardable(err) {
				t.Errorf("calls(%s) = %v, want an unguardable error", resp, err)
			}
		}
	})
}

// A streamed hosted tool search is guarded as the sync one: the search's
// items stream to the client as they came, the namespaced call is held and
// validated, its bad arguments re-asked, and the client's stream ends with
// the corrected call.
func TestResponsesToolSearchStreamGuarded(t *testing.T) {
	t.Parallel()
	body := `{"model":"gpt-5.4","stream":true,"input":[{"role":"user","content":"List open orders for customer CUST-12345."}],"tools":[` + crmNamespace + `,{"type":"tool_search"}]}`
	search := `{"id":"tsc_1","type":"tool_search_call","execution":"server","call_id":null,"status":"completed","arguments":{"paths":["crm"]}}`
	loaded := `{"id":"tso_1","type":"tool_search_output","execution":"server","call_id":null,"status":"completed","tools":[` + crmNamespace + `]}`
	// stream is the model's answer: the search and the call (the first
	// attempt), or the call alone (the re-ask, whose input holds the search).
	stream := func(args string, searched bool) fp.Step {
		id := map[bool]string{true: "fc_1", false: "fc_2"}[searched]
		fc := `{"id":"` + id + `","type":"function_call","call_id":"call_1","namespace":"crm","name":"list_open_orders","arguments":` + string(marshalString(args)) + `,"status":"completed"}`
		up := (&responsesEvents{}).add("response.created", responsesCreated)
		output := []string{fc}
		if searched {
			up.add("response.output_item.added", `"output_index":0,"item":{"id":"tsc_1","type":"tool_search_call","execution":"server","call_id":null,"status":"in_progress","arguments":{}}`).
				add("response.output_item.done", `"output_index":0,"item":`+search).
				add("response.output_item.added", `"output_index":1,"item":{"id":"tso_1","type":"tool_search_output","execution":"server","call_id":null,"status":"in_progress","tools":[]}`).
				add("response.output_item.done", `"output_index":1,"item":`+loaded)
			output = []string{search, loaded, fc}
		}
		i := fmt.Sprint(len(output) - 1)
		up.add("response.output_item.added", `"output_index":`+i+`,"item":{"id":"`+id+`","type":"function_call","call_id":"call_1","namespace":"crm","name":"list_open_orders","arguments":"","status":"in_progress"}`).
			add("response.function_call_arguments.delta", `"item_id":"`+id+`","output_index":`+i+`,"delta":`+string(marshalString(args))).
			add("response.function_call_arguments.done", `"item_id":"`+id+`","output_index":`+i+`,"arguments":`+string(marshalString(args))).
			add("response.output_item.done", `"output_index":`+i+`,"item":`+fc).
			add("response.completed", responsesCompleted(output...))
		return sse(up.evs...)
	}
	srv := fp.New(stream(`{"customer":"CUST-12345"}`, true), stream(`{"customer_id":"CUST-12345"}`, false))
	defer srv.Close()
	var log kindLog
	ex := do(t, New(nil, ToolArgValidation(log.handler())), context.Background(), srv.URL+"/v1/responses", []byte(body))
	t.Logf("events: %v", log.count())
	if ex.resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", ex.resp.StatusCode, ex.body)
	}
	got := assemble(t, responsesWire{}, events(t, ex.body))
	t.Logf("the client's stream assembled:\n%s", got)
	calls := callsOf(t, responsesWire{}, got)
	if len(calls) != 1 || calls[0].Name != "crm.list_open_orders" || !sameJSON(calls[0].Args, []byte(`{"customer_id":"CUST-12345"}`)) {
		t.Errorf("the client reads %+v, want the corrected call", calls)
	}
	items, _, _, err := responsesOutput(got)
	if err != nil || len(items) != 3 || !sameJSON(raw(got, items[0]), []byte(search)) || !sameJSON(raw(got, items[1]), []byte(loaded)) {
		t.Errorf("the client's output is %d items (%v), want the search, its output and the call", len(items), err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2 (the bad call re-asked)", len(reqs))
	}
	var types []string
	for _, it := range reaskInput(t, reqs[1].Body)[1:] {
		typ, _ := it["type"].(string)
		types = append(types, typ)
	}
	if want := "tool_search_call tool_search_output function_call function_call_output"; strings.Join(types, " ") != want {
		t.Errorf("the re-ask adds %v, want %s", types, want)
	}
	if n := log.count(); n[guard.EventInvalid] != 1 || n[guard.EventReask] != 1 || n[guard.EventUnguarded] != 0 {
		t.Errorf("events %v, want one invalid, one reask, nothing unguarded", n)
	}
}
