package httpguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// loopTurn appends to a request the model's turn as the provider sent it
// and one result per call, the way an SDK program's own loop does
// (toolstage/sdktest: openai-go's message.ToParam() and ToolMessage per
// call, anthropic-sdk-go's ToParam() and a tool_result per tool_use,
// genai's candidate content and FunctionResponse parts); it returns the
// calls it answered.
type loopTurn func(t *testing.T, req map[string]any, resp []byte) int

func decodeAny(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return m
}

func appendTo(req map[string]any, key string, items ...any) {
	list, _ := req[key].([]any)
	req[key] = append(list, items...)
}

var loopTurns = map[string]loopTurn{
	"chat": func(t *testing.T, req map[string]any, resp []byte) int {
		msg := decodeAny(t, resp)["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		appendTo(req, "messages", msg)
		calls, _ := msg["tool_calls"].([]any)
		for _, c := range calls {
			appendTo(req, "messages", map[string]any{"role": "tool", "tool_call_id": c.(map[string]any)["id"], "content": "sunny"})
		}
		return len(calls)
	},
	"responses": func(t *testing.T, req map[string]any, resp []byte) int {
		n := 0
		for _, it := range decodeAny(t, resp)["output"].([]any) {
			item := it.(map[string]any)
			appendTo(req, "input", item)
			if item["type"] == "function_call" {
				appendTo(req, "input", map[string]any{"type": "function_call_output", "call_id": item["call_id"], "output": "sunny"})
				n++
			}
		}
		return n
	},
	"messages": func(t *testing.T, req map[string]any, resp []byte) int {
		content := decodeAny(t, resp)["content"].([]any)
		appendTo(req, "messages", map[string]any{"role": "assistant", "content": content})
		var results []any
		for _, b := range content {
			if block := b.(map[string]any); block["type"] == "tool_use" {
				results = append(results, map[string]any{"type": "tool_result", "tool_use_id": block["id"], "content": "sunny"})
			}
		}
		if len(results) > 0 {
			appendTo(req, "messages", map[string]any{"role": "user", "content": results})
		}
		return len(results)
	},
	"gemini": func(t *testing.T, req map[string]any, resp []byte) int {
		content := decodeAny(t, resp)["candidates"].([]any)[0].(map[string]any)["content"]
		appendTo(req, "contents", content)
		var parts []any
		for _, p := range content.(map[string]any)["parts"].([]any) {
			if fc, ok := p.(map[string]any)["functionCall"].(map[string]any); ok {
				parts = append(parts, map[string]any{"functionResponse": map[string]any{"name": fc["name"], "response": map[string]any{"output": "sunny"}}})
			}
		}
		if len(parts) > 0 {
			appendTo(req, "contents", map[string]any{"role": "user", "parts": parts})
		}
		return len(parts)
	},
}

// A history built the way an SDK program's own loop builds it over a
// toolstage.Stage (a result appended for every call, the model's turn as
// the provider sent it) never needs a repair: through HistoryCheck,
// RefuseHistory never refuses it, and RepairHistory reports nothing and
// sends every request byte for byte as the client made it, over four turns
// with two calls, one call, a bad call re-asked by ToolArgValidation, and
// the answer.
func TestHistoryOfSDKLoopsNeedsNoRepair(t *testing.T) {
	t.Parallel()
	starts := map[string]string{
		"chat":      `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris and Rome?"}],` + chatTools + `}`,
		"responses": `{"model":"gpt-4o","input":[{"role":"user","content":"Weather in Paris and Rome?"}],` + responsesTools + `}`,
		"messages":  `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather in Paris and Rome?"}],` + messagesTools + `}`,
		"gemini":    `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris and Rome?"}]}],` + geminiTools + `}`,
	}
	for _, proto := range []historyProto{histChat, histResponses, histMessages, histGemini} {
		for _, p := range []HistoryPolicy{RepairHistory, RefuseHistory} {
			t.Run(fmt.Sprintf("%s/%d", proto.name, p), func(t *testing.T) {
				t.Parallel()
				srv := fp.New(
					fp.Reply(fp.Text("Checking both."), fp.Call("get_weather", `{"city":"Paris"}`), fp.Call("get_weather", `{"city":"Rome"}`)),
					fp.Reply(fp.Call("get_weather", `{"city":"Oslo"}`)),
					fp.Reply(fp.Call("get_weather", `{"city":7}`)), // re-asked: a turn the client never sees
					fp.Reply(fp.Call("get_weather", `{"city":"Lima"}`)),
					fp.Reply(fp.Text("Sunny everywhere.")),
				)
				defer srv.Close()
				var log historyEvents
				tr := New(nil, HistoryCheck(p), ToolArgValidation())
				req := decodeAny(t, []byte(starts[proto.name]))
				var sent [][]byte
				for turn := 0; ; turn++ {
					body, err := json.Marshal(req)
					if err != nil {
						t.Fatal(err)
					}
					sent = append(sent, body)
					ex := do(t, tr, log.ctx(), srv.URL+proto.path, body)
					if ex.resp.StatusCode != http.StatusOK {
						t.Fatalf("turn %d: the client read %d %s", turn, ex.resp.StatusCode, ex.body)
					}
					if loopTurns[proto.name](t, req, ex.body) == 0 {
						break
					}
				}
				if len(sent) != 4 {
					t.Errorf("the loop made %d requests, want 4", len(sent))
				}
				kinds := map[guard.EventKind]int{}
				for _, e := range log.all() {
					kinds[e.Kind]++
				}
				if kinds[guard.EventHistoryRepaired] != 0 || kinds[guard.EventReask] != 1 {
					t.Errorf("events %v, want no %s and the one re-ask", kinds, guard.EventHistoryRepaired)
				}
				t.Logf("events: %v", kinds)
				got := srv.Requests()
				if len(got) != 5 {
					t.Fatalf("the provider received %d requests, want 5", len(got))
				}
				// The client's requests reached the provider as they were;
				// the re-ask (the fourth) is ToolArgValidation's.
				for i, j := range []int{0, 1, 2, 4} {
					if !bytes.Equal(got[j].Body, sent[i]) {
						t.Errorf("request %d reached the provider as\n%s\nthe client sent\n%s", i, got[j].Body, sent[i])
					}
				}
			})
		}
	}
}

// A clean history is sent byte for byte as the client wrote it (spacing,
// key order, escapes, unknown members), with no event, under RepairHistory.
func TestHistoryCleanUntouched(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		proto historyProto
		body  string
	}{
		{histChat, "{ \"messages\" : [ {\"content\":\"Weather in \\u0050aris?\",\"role\":\"user\"},\n {\"role\":\"assistant\",\"x_extra\":1,\"tool_calls\":[{\"type\":\"function\",\"id\":\"call_1\",\"function\":{\"arguments\":\"{\\\"city\\\": \\\"Paris\\\"}\",\"name\":\"get_weather\"}}]},\n {\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":[{\"type\":\"text\",\"text\":\"sunny\"}]} ], \"model\":\"gpt-4o\", " + chatTools + " }"},
		{histResponses, "{\"model\":\"gpt-4o\",\"input\":[ {\"role\":\"user\",\"content\":\"Weather?\"}, {\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[]}, {\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}, {\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"sunny\"} ]," + responsesTools + "}"},
		{histMessages, "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":1024,\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"sig\"},{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{\"city\":\"Paris\"}}]},{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":[{\"type\":\"text\",\"text\":\"sunny\"}]},{\"type\":\"text\",\"text\":\"Thanks\"}]}]," + messagesTools + "}"},
		{histGemini, "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"Weather?\"}]},{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}},\"thoughtSignature\":\"c2ln\"},{\"functionCall\":{\"name\":\"get_weather\"}}]},{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"get_weather\",\"response\":{\"r\":1}}},{\"functionResponse\":{\"name\":\"get_weather\",\"response\":{\"r\":2}}}]}]," + geminiTools + "}"},
		// Each result in a message of its own: Anthropic combines
		// consecutive user messages, and clients that answer each call in
		// a content of its own send Gemini this.
		{histMessages, "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":1024,\"messages\":[{\"role\":\"user\",\"content\":\"Weather?\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{\"city\":\"Paris\"}},{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"get_weather\",\"input\":{\"city\":\"Rome\"}}]},{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":\"sunny\"}]},{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_2\",\"content\":\"rainy\"}]}]," + messagesTools + "}"},
		{histGemini, "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"Weather?\"}]},{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}},{\"functionCall\":{\"name\":\"get_time\",\"args\":{}}}]},{\"role\":\"function\",\"parts\":[{\"functionResponse\":{\"name\":\"get_weather\",\"response\":{\"r\":1}}}]},{\"role\":\"function\",\"parts\":[{\"functionResponse\":{\"name\":\"get_time\",\"response\":{\"r\":2}}}]}]," + geminiTools + "}"},
	} {
		t.Run(c.proto.name, func(t *testing.T) {
			t.Parallel()
			ex := runHistory(t, RepairHistory, c.proto, c.body)
			t.Logf("the client sent, the provider received:\n%s", c.body)
			if len(ex.sent) != 1 || string(ex.sent[0]) != c.body {
				t.Fatalf("the provider received %q, want the client's bytes %q", ex.sent, c.body)
			}
			if len(ex.events) != 0 {
				t.Errorf("%d events, want none: %+v", len(ex.events), ex.events)
			}
			if refused := runHistory(t, RefuseHistory, c.proto, c.body); refused.status != http.StatusOK {
				t.Errorf("RefuseHistory: the client read %d %s", refused.status, refused.body)
			}
		})
	}
}

// A request that continues server-side state, or refers to stored items,
// is not checked: its calls may be in the server's part of the history,
// so a result whose call is not in the body is no orphan.
func TestHistoryServerStateUnchecked(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"model":"gpt-4o","previous_response_id":"resp_1","input":[{"type":"function_call_output","call_id":"call_1","output":"sunny"}],` + responsesTools + `}`,
		`{"model":"gpt-4o","conversation":"conv_1","input":[{"type":"function_call_output","call_id":"call_1","output":"sunny"}],` + responsesTools + `}`,
		`{"model":"gpt-4o","input":[{"role":"user","content":"Weather?"},{"type":"item_reference","id":"fc_1"},{"type":"function_call_output","call_id":"call_1","output":"sunny"}],` + responsesTools + `}`,
	} {
		ex := runHistory(t, RefuseHistory, histResponses, body)
		if ex.status != http.StatusOK || len(ex.sent) != 1 || string(ex.sent[0]) != body {
			t.Errorf("the client read %d %s, the provider received %q; want the request as sent", ex.status, ex.body, ex.sent)
		}
	}
}

// A streaming request with a faulty history is refused before any stream
// begins, in the protocol's error shape, and nothing is sent upstream.
func TestHistoryRefusedStream(t *testing.T) {
	t.Parallel()
	body := `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":null}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"?"}]}],` + messagesTools + `}`
	ex := runHistory(t, RefuseHistory, histMessages, body)
	t.Logf("the client read %d: %s", ex.status, ex.body)
	if ex.status != http.StatusUnprocessableEntity || len(ex.sent) != 0 ||
		!strings.Contains(string(ex.body), `{"type":"error","error":{"type":"invalid_history","message":"httpguard: the provider would refuse this history: messages[1]: null_input`) {
		t.Fatalf("the client read %d %s, the provider received %d requests; want a 422 invalid_history naming messages[1], none sent", ex.status, ex.body, len(ex.sent))
	}
	repaired := runHistory(t, RepairHistory, histMessages, body)
	if repaired.status != http.StatusOK || len(repaired.sent) != 1 || !strings.Contains(string(repaired.sent[0]), `"input":{}`) {
		t.Fatalf("RepairHistory: the client read %d, the provider received %q", repaired.status, repaired.sent)
	}
}

// HistoryCheck refuses a policy that is not one at construction.
func TestHistoryCheckPanicsOnBadPolicy(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "not a HistoryPolicy") {
			t.Errorf("HistoryCheck(7) recovered %v, want a panic naming the policy", r)
		}
	}()
	HistoryCheck(HistoryPolicy(7))
}
