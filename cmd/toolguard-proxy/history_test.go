package main

import (
	"strings"
	"testing"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// unansweredBody is a Chat request whose history holds a call without a
// result: every later turn of it a provider answers with a 400.
const unansweredBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"user","content":"And?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`

// -history chooses what the proxy does with a history the provider would
// refuse: off (the default) sends it as it came, repair sends it repaired
// (a history_repaired event), refuse answers 422 invalid_history and sends
// nothing.
func TestHistoryFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		status   int
		requests int
		sent     string // what the upstream must have received, if anything
		event    bool
	}{
		{nil, 200, 1, unansweredBody, false},
		{[]string{"-history", "off"}, 200, 1, unansweredBody, false},
		{[]string{"-history", "repair"}, 200, 1, `"tool_call_id":"call_1","content":"Error: the call's outcome is unknown`, true},
		{[]string{"-history", "refuse"}, 422, 0, "", false},
	} {
		t.Run(strings.Join(append([]string{"default"}, tc.args...), " "), func(t *testing.T) {
			t.Parallel()
			up := fp.New(fp.Reply(fp.Text("It is sunny.")))
			defer up.Close()
			p := startProxy(t, up.URL, tc.args...)
			resp, body := post(t, p.URL+"/v1/chat/completions", unansweredBody)
			t.Logf("the client read %d %s", resp.StatusCode, body)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status == 422 && !strings.Contains(string(body), `"invalid_history"`) {
				t.Errorf("the 422 is not invalid_history: %s", body)
			}
			reqs := up.Requests()
			if len(reqs) != tc.requests {
				t.Fatalf("the upstream got %d requests, want %d", len(reqs), tc.requests)
			}
			if tc.sent != "" && !strings.Contains(string(reqs[0].Body), tc.sent) {
				t.Errorf("the upstream received %s\nwant it to hold %s", reqs[0].Body, tc.sent)
			}
			counted := false
			for _, l := range scrape(t, p.URL+"/metrics") {
				counted = counted || strings.Contains(l, `toolguard_event_kind="history_repaired"`) && strings.HasSuffix(l, " 1")
			}
			if counted != tc.event {
				t.Errorf("history_repaired counted in toolguard_events_total: %v, want %v", counted, tc.event)
			}
		})
	}
}
