package httpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// historyEvents records the events reported on a context ([guard.WithEvents]).
type historyEvents struct {
	mu     sync.Mutex
	events []guard.Event
}

func (l *historyEvents) ctx() context.Context {
	return guard.WithEvents(context.Background(), func(_ context.Context, e guard.Event) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, e)
	})
}

func (l *historyEvents) all() []guard.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]guard.Event(nil), l.events...)
}

// historyProto is a protocol's path and a reply its fake provider makes.
type historyProto struct {
	name string
	path string
}

var (
	histChat      = historyProto{"chat", "/v1/chat/completions"}
	histResponses = historyProto{"responses", "/v1/responses"}
	histMessages  = historyProto{"messages", "/v1/messages"}
	histGemini    = historyProto{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent"}
)

// historyCase is a client's request whose history has a fault, and the
// request the provider must receive once it is repaired.
type historyCase struct {
	name   string
	proto  historyProto
	body   string // the client's request
	want   string // what the provider receives under RepairHistory; "" when it is refused
	faults []HistoryFault
	paths  [][]string
	// refused is the message of the 422 under RepairHistory when the
	// fault cannot be repaired, or under RefuseHistory.
	refused string
}

// historyExchange is one request through HistoryCheck(p) to a loopback
// provider that answers with a text.
type historyExchange struct {
	sent   [][]byte // the bodies the provider received
	status int
	body   []byte // what the client read
	events []guard.Event
}

func runHistory(t *testing.T, p HistoryPolicy, proto historyProto, body string, mws ...Middleware) historyExchange {
	t.Helper()
	srv := fp.New(fp.Reply(fp.Text("done")))
	defer srv.Close()
	var log historyEvents
	tr := New(nil, append([]Middleware{HistoryCheck(p)}, mws...)...)
	ex := do(t, tr, log.ctx(), srv.URL+proto.path, []byte(body))
	out := historyExchange{status: ex.resp.StatusCode, body: ex.body, events: log.all()}
	for _, r := range srv.Requests() {
		out.sent = append(out.sent, r.Body)
	}
	return out
}

// checkRepaired runs c under RepairHistory and RefuseHistory and checks
// what the provider received and what the client read.
func checkRepaired(t *testing.T, c historyCase) {
	t.Helper()
	repaired := runHistory(t, RepairHistory, c.proto, c.body)
	t.Logf("the client sent:\n%s", c.body)
	if c.want == "" {
		if len(repaired.sent) != 0 || repaired.status != http.StatusUnprocessableEntity {
			t.Fatalf("RepairHistory: the provider received %d requests, the client read %d %s; want none and 422",
				len(repaired.sent), repaired.status, repaired.body)
		}
		t.Logf("RepairHistory: the client read %d:\n%s", repaired.status, repaired.body)
		if !strings.Contains(string(repaired.body), c.refused) {
			t.Errorf("RepairHistory: the 422 says %s, want %q in it", repaired.body, c.refused)
		}
	} else {
		if len(repaired.sent) != 1 {
			t.Fatalf("RepairHistory: the provider received %d requests, want 1 (client read %d %s)", len(repaired.sent), repaired.status, repaired.body)
		}
		t.Logf("RepairHistory: the provider received:\n%s", repaired.sent[0])
		if string(repaired.sent[0]) != c.want {
			t.Errorf("RepairHistory: the provider received\n%s\nwant\n%s", repaired.sent[0], c.want)
		}
		if !json.Valid(repaired.sent[0]) {
			t.Errorf("the repaired request is not JSON")
		}
		if repaired.status != http.StatusOK {
			t.Errorf("RepairHistory: the client read %d %s", repaired.status, repaired.body)
		}
		var faults []HistoryFault
		var paths [][]string
		for _, e := range repaired.events {
			if e.Kind != guard.EventHistoryRepaired || e.Middleware != "HistoryCheck" {
				t.Errorf("unexpected event %+v", e)
				continue
			}
			var he *HistoryError
			if !errors.As(e.Err, &he) || !he.Repairable {
				t.Errorf("event Err = %v, want a repairable *HistoryError", e.Err)
				continue
			}
			faults = append(faults, he.Fault)
			paths = append(paths, e.Paths)
			t.Logf("event %s: %v %v", e.Kind, e.Err, e.Paths)
		}
		if !equalJSON(faults, c.faults) || !equalJSON(paths, c.paths) {
			t.Errorf("events: faults %v paths %q, want %v %q", faults, paths, c.faults, c.paths)
		}
	}
	refused := runHistory(t, RefuseHistory, c.proto, c.body)
	t.Logf("RefuseHistory: the client read %d:\n%s", refused.status, refused.body)
	if len(refused.sent) != 0 || refused.status != http.StatusUnprocessableEntity ||
		!bytes.Contains(bytes.ToLower(refused.body), []byte("invalid_history")) {
		t.Errorf("RefuseHistory: the provider received %d requests, the client read %d %s; want none and a 422 invalid_history",
			len(refused.sent), refused.status, refused.body)
	}
	if len(refused.events) != 0 {
		t.Errorf("RefuseHistory reported %d events, want none", len(refused.events))
	}
	if !strings.Contains(string(refused.body), c.refused) {
		t.Errorf("RefuseHistory: the 422 says %s, want %q in it", refused.body, c.refused)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

const (
	chatTools      = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	responsesTools = `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	messagesTools  = `"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	geminiTools    = `"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}}}}]}]`
)

// Each fault of a history is repaired as the provider accepts it, or the
// request is refused with a 422 naming the message; under RefuseHistory
// every one is refused and nothing is sent.
func TestHistoryRepaired(t *testing.T) {
	t.Parallel()
	for _, c := range historyCases {
		t.Run(c.proto.name+"/"+c.name, func(t *testing.T) {
			t.Parallel()
			checkRepaired(t, c)
		})
	}
}

var historyCases = []historyCase{
	{
		name:   "call without a result",
		proto:  histChat,
		body:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"user","content":"And?"}],` + chatTools + `}`,
		want:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"Error: the call's outcome is unknown: the conversation holds no result for it (toolguard added this). Check before calling it again."},{"role":"user","content":"And?"}],` + chatTools + `}`,
		faults: []HistoryFault{UnansweredCall}, paths: [][]string{{"/messages/1/tool_calls/0"}},
		refused: `messages[1]: unanswered_call (call \"call_1\")`,
	},
	{
		name:   "orphaned result",
		proto:  histChat,
		body:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"},{"role":"tool","tool_call_id":"call_9","content":"72F"},{"role":"user","content":"And?"}],` + chatTools + `}`,
		want:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"},{"role":"user","content":"toolguard: a tool result whose call is not in the conversation (call \"call_9\"): 72F"},{"role":"user","content":"And?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`,
		faults: []HistoryFault{OrphanResult}, paths: [][]string{{"/messages/1"}},
		refused: `messages[1]: orphan_result (call \"call_9\")`,
	},
	{
		name:   "duplicate id",
		proto:  histChat,
		body:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Paris and Rome?"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"rainy"}],` + chatTools + `}`,
		want:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Paris and Rome?"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"},{"role":"assistant","tool_calls":[{"id":"call_1_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},{"role":"tool","tool_call_id":"call_1_2","content":"rainy"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`,
		faults: []HistoryFault{DuplicateID}, paths: [][]string{{"/messages/3/tool_calls/0/id", "/messages/4/tool_call_id"}},
		refused: `messages[3]: duplicate_id (call \"call_1\")`,
	},
	{
		name:    "duplicate id in one message",
		proto:   histChat,
		body:    `{"model":"gpt-4o","messages":[{"role":"user","content":"Paris and Rome?"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"}],` + chatTools + `}`,
		refused: `messages[1]: duplicate_id (call \"call_1\"): two calls of one message have the same id`,
	},
	{
		name:   "arguments not an object",
		proto:  histChat,
		body:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Par"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"}],` + chatTools + `}`,
		want:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"toolguard: the arguments of this call were not a JSON object, so the conversation shows {} instead; as sent they were: {\"city\": \"Par\n\nsunny"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`,
		faults: []HistoryFault{NonObjectArguments}, paths: [][]string{{"/messages/1/tool_calls/0/function/arguments", "/messages/2/content"}},
		refused: `messages[1]: non_object_arguments (call \"call_1\")`,
	},
	{
		name:   "call without a result",
		proto:  histResponses,
		body:   `{"model":"gpt-4o","input":[{"role":"user","content":"Weather in Paris?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"role":"user","content":"And?"}],` + responsesTools + `}`,
		want:   `{"model":"gpt-4o","input":[{"role":"user","content":"Weather in Paris?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_1","output":"Error: the call's outcome is unknown: the conversation holds no result for it (toolguard added this). Check before calling it again."},{"role":"user","content":"And?"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{UnansweredCall}, paths: [][]string{{"/input/1"}},
		refused: `input[1]: unanswered_call (call \"call_1\")`,
	},
	{
		name:   "orphaned result",
		proto:  histResponses,
		body:   `{"model":"gpt-4o","input":[{"role":"user","content":"Weather in Paris?"},{"type":"function_call_output","call_id":"call_9","output":"72F"},{"role":"user","content":"And?"}],` + responsesTools + `}`,
		want:   `{"model":"gpt-4o","input":[{"role":"user","content":"Weather in Paris?"},{"role":"user","content":"toolguard: a tool result whose call is not in the conversation (call \"call_9\"): 72F"},{"role":"user","content":"And?"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{OrphanResult}, paths: [][]string{{"/input/1"}},
		refused: `input[1]: orphan_result (call \"call_9\")`,
	},
	{
		name:   "duplicate id",
		proto:  histResponses,
		body:   `{"model":"gpt-4o","input":[{"role":"user","content":"Paris and Rome?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_1","output":"sunny"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Rome\"}"},{"type":"function_call_output","call_id":"call_1","output":"rainy"}],` + responsesTools + `}`,
		want:   `{"model":"gpt-4o","input":[{"role":"user","content":"Paris and Rome?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call_output","call_id":"call_1","output":"sunny"},{"type":"function_call","call_id":"call_1_2","name":"get_weather","arguments":"{\"city\":\"Rome\"}"},{"type":"function_call_output","call_id":"call_1_2","output":"rainy"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{DuplicateID}, paths: [][]string{{"/input/3/call_id", "/input/4/call_id"}},
		refused: `input[3]: duplicate_id (call \"call_1\")`,
	},
	{
		name:    "duplicate id, output after two calls",
		proto:   histResponses,
		body:    `{"model":"gpt-4o","input":[{"role":"user","content":"Paris and Rome?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Rome\"}"},{"type":"function_call_output","call_id":"call_1","output":"sunny"}],` + responsesTools + `}`,
		refused: `input[3]: duplicate_id (call \"call_1\"): an output follows two calls with its call_id`,
	},
	{
		name:   "arguments not an object",
		proto:  histResponses,
		body:   `{"model":"gpt-4o","input":[{"role":"user","content":"Weather in Paris?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"[\"Paris\"]"},{"type":"function_call_output","call_id":"call_1","output":"sunny"}],` + responsesTools + `}`,
		want:   `{"model":"gpt-4o","input":[{"role":"user","content":"Weather in Paris?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"toolguard: the arguments of this call were not a JSON object, so the conversation shows {} instead; as sent they were: [\"Paris\"]\n\nsunny"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{NonObjectArguments}, paths: [][]string{{"/input/1/arguments", "/input/2/output"}},
		refused: `input[1]: non_object_arguments (call \"call_1\")`,
	},
	{
		name:   "call without a result",
		proto:  histMessages,
		body:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":"And?"}],` + messagesTools + `}`,
		want:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"Error: the call's outcome is unknown: the conversation holds no result for it (toolguard added this). Check before calling it again.","is_error":true},{"type":"text","text":"And?"}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{UnansweredCall}, paths: [][]string{{"/messages/1/content/1"}},
		refused: `messages[1]: unanswered_call (call \"toolu_1\")`,
	},
	{
		name:   "orphaned result",
		proto:  histMessages,
		body:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"72F"},{"type":"text","text":"Weather in Paris?"}]}],` + messagesTools + `}`,
		want:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"text","text":"Weather in Paris?"},{"type":"text","text":"toolguard: a tool result whose call is not in the conversation (call \"toolu_9\"): 72F"}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{OrphanResult}, paths: [][]string{{"/messages/0/content/0"}},
		refused: `messages[0]: orphan_result (call \"toolu_9\")`,
	},
	{
		name:   "duplicate id",
		proto:  histMessages,
		body:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Paris and Rome?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Rome"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"rainy"}]}],` + messagesTools + `}`,
		want:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Paris and Rome?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1_2","name":"get_weather","input":{"city":"Rome"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1_2","content":"rainy"}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{DuplicateID}, paths: [][]string{{"/messages/3/content/0/id", "/messages/4/content/0/tool_use_id"}},
		refused: `messages[3]: duplicate_id (call \"toolu_1\")`,
	},
	{
		name:    "duplicate id in one message",
		proto:   histMessages,
		body:    `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Paris and Rome?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Rome"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]}],` + messagesTools + `}`,
		refused: `messages[1]: duplicate_id (call \"toolu_1\"): two tool_use blocks of one message have the same id`,
	},
	{
		name:   "null input",
		proto:  histMessages,
		body:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":null}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"which city?","is_error":true}]}],` + messagesTools + `}`,
		want:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"which city?","is_error":true}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{NullInput}, paths: [][]string{{"/messages/1/content/0/input"}},
		refused: `messages[1]: null_input (call \"toolu_1\")`,
	},
	{
		name:   "input not an object",
		proto:  histMessages,
		body:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":"Paris"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]}],` + messagesTools + `}`,
		want:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"toolguard: the arguments of this call were not a JSON object, so the conversation shows {} instead; as sent they were: \"Paris\"\n\nsunny"}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{NonObjectArguments}, paths: [][]string{{"/messages/1/content/0/input", "/messages/2/content/0/content"}},
		refused: `messages[1]: non_object_arguments (call \"toolu_1\")`,
	},
	{
		name:   "call without a result",
		proto:  histGemini,
		body:   `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},{"role":"user","parts":[{"text":"And?"}]}],` + geminiTools + `}`,
		want:   `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"error":"Error: the call's outcome is unknown: the conversation holds no result for it (toolguard added this). Check before calling it again."}}},{"text":"And?"}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}}}}]}]}`,
		faults: []HistoryFault{UnansweredCall}, paths: [][]string{{"/contents/1/parts/0"}},
		refused: `contents[1]: unanswered_call`,
	},
	{
		name:   "orphaned result",
		proto:  histGemini,
		body:   `{"contents":[{"role":"user","parts":[{"text":"Hi"}]},{"role":"model","parts":[{"text":"Hello."}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp":"72F"}}},{"text":"Weather in Paris?"}]}],` + geminiTools + `}`,
		want:   `{"contents":[{"role":"user","parts":[{"text":"Hi"}]},{"role":"model","parts":[{"text":"Hello."}]},{"role":"user","parts":[{"text":"Weather in Paris?"},{"text":"toolguard: a tool result whose call is not in the conversation: get_weather returned {\"temp\":\"72F\"}"}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}}}}]}]}`,
		faults: []HistoryFault{OrphanResult}, paths: [][]string{{"/contents/2/parts/0"}},
		refused: `contents[2]: orphan_result`,
	},
	{
		name:   "duplicate id",
		proto:  histGemini,
		body:   `{"contents":[{"role":"user","parts":[{"text":"Paris and Rome?"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"get_weather","args":{"city":"Paris"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"get_weather","response":{"result":"sunny"}}}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"get_weather","args":{"city":"Rome"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"get_weather","response":{"result":"rainy"}}}]}],` + geminiTools + `}`,
		want:   `{"contents":[{"role":"user","parts":[{"text":"Paris and Rome?"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"get_weather","args":{"city":"Paris"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"get_weather","response":{"result":"sunny"}}}]},{"role":"model","parts":[{"functionCall":{"id":"c1_2","name":"get_weather","args":{"city":"Rome"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"c1_2","name":"get_weather","response":{"result":"rainy"}}}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}}}}]}]}`,
		faults: []HistoryFault{DuplicateID}, paths: [][]string{{"/contents/3/parts/0/functionCall/id", "/contents/4/parts/0/functionResponse/id"}},
		refused: `contents[3]: duplicate_id (call \"c1\")`,
	},
	{
		name:    "two calls of one name, one response",
		proto:   histGemini,
		body:    `{"contents":[{"role":"user","parts":[{"text":"Paris and Rome?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}},{"functionCall":{"name":"get_weather","args":{"city":"Rome"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"sunny"}}}]}],` + geminiTools + `}`,
		refused: `contents[1]: unanswered_call: 2 calls of get_weather without ids have 1 responses`,
	},
	{
		name:   "args not an object",
		proto:  histGemini,
		body:   `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":"Paris"}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"sunny"}}}]}],` + geminiTools + `}`,
		want:   `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"sunny","toolguard_note":"toolguard: the arguments of this call were not a JSON object, so the conversation shows {} instead; as sent they were: \"Paris\""}}}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}}}}]}]}`,
		faults: []HistoryFault{NonObjectArguments}, paths: [][]string{{"/contents/1/parts/0/functionCall/args", "/contents/2/parts/0/functionResponse/response/toolguard_note"}},
		refused: `contents[1]: non_object_arguments`,
	},
	{
		name:   "orphaned result among a turn's results",
		proto:  histChat,
		body:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Paris and Rome?"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"},{"role":"tool","tool_call_id":"call_9","content":[{"type":"text","text":"72F"}]},{"role":"tool","tool_call_id":"call_2","content":"rainy"},{"role":"user","content":"Thanks"}],` + chatTools + `}`,
		want:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Paris and Rome?"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"},{"role":"tool","tool_call_id":"call_2","content":"rainy"},{"role":"user","content":"toolguard: a tool result whose call is not in the conversation (call \"call_9\"): 72F"},{"role":"user","content":"Thanks"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`,
		faults: []HistoryFault{OrphanResult}, paths: [][]string{{"/messages/3"}},
		refused: `messages[3]: orphan_result (call \"call_9\")`,
	},
	{
		name:   "last call without a result, arguments not an object",
		proto:  histChat,
		body:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather?"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}],` + chatTools + `}`,
		want:   `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather?"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"Error: the call's outcome is unknown: the conversation holds no result for it (toolguard added this). Check before calling it again.\n\ntoolguard: the arguments of this call were not a JSON object, so the conversation shows {} instead; as sent they were: (empty)"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`,
		faults: []HistoryFault{NonObjectArguments, UnansweredCall}, paths: [][]string{{"/messages/1/tool_calls/0/function/arguments"}, {"/messages/1/tool_calls/0"}},
		refused: `messages[1]: non_object_arguments (call \"call_1\")`,
	},
	{
		name:   "calls of a batch, one without a result",
		proto:  histResponses,
		body:   `{"model":"gpt-4o","input":[{"role":"user","content":"Paris and Rome?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call","call_id":"call_2","name":"get_weather","arguments":"{\"city\":\"Rome\"}"},{"type":"function_call_output","call_id":"call_1","output":"sunny"}],` + responsesTools + `}`,
		want:   `{"model":"gpt-4o","input":[{"role":"user","content":"Paris and Rome?"},{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},{"type":"function_call","call_id":"call_2","name":"get_weather","arguments":"{\"city\":\"Rome\"}"},{"type":"function_call_output","call_id":"call_2","output":"Error: the call's outcome is unknown: the conversation holds no result for it (toolguard added this). Check before calling it again."},{"type":"function_call_output","call_id":"call_1","output":"sunny"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{UnansweredCall}, paths: [][]string{{"/input/2"}},
		refused: `input[2]: unanswered_call (call \"call_2\")`,
	},
	{
		name:   "last call without a result",
		proto:  histMessages,
		body:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]}],` + messagesTools + `}`,
		want:   `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"Error: the call's outcome is unknown: the conversation holds no result for it (toolguard added this). Check before calling it again.","is_error":true}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]}`,
		faults: []HistoryFault{UnansweredCall}, paths: [][]string{{"/messages/1/content/0"}},
		refused: `messages[1]: unanswered_call (call \"toolu_1\")`,
	},
	{
		name:    "orphaned result holding an image",
		proto:   histMessages,
		body:    `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}],` + messagesTools + `}`,
		refused: `messages[0]: orphan_result (call \"toolu_9\"): a tool_result whose tool_use is not in the message before it, with content a note cannot hold`,
	},
	{
		name:   "last call without a result",
		proto:  histGemini,
		body:   `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"get_weather","args":{"city":"Paris"}}}]}],` + geminiTools + `}`,
		want:   `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"get_weather","args":{"city":"Paris"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"get_weather","response":{"error":"Error: the call's outcome is unknown: the conversation holds no result for it (toolguard added this). Check before calling it again."}}}]}],"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}}}}]}]}`,
		faults: []HistoryFault{UnansweredCall}, paths: [][]string{{"/contents/1/parts/0"}},
		refused: `contents[1]: unanswered_call (call \"c1\")`,
	},
}
