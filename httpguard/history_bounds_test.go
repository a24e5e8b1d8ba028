package httpguard

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// chatHistory returns a Chat request of n turns, each an assistant message
// with calls tool calls and, when answered, their tool messages.
func chatHistory(n, calls int, answered bool) string {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","messages":[{"role":"user","content":"Go."}`)
	for i := 0; i < n; i++ {
		b.WriteString(`,{"role":"assistant","tool_calls":[`)
		for j := 0; j < calls; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"id":"c%d_%d","type":"function","function":{"name":"get_weather","arguments":"{}"}}`, i, j)
		}
		b.WriteString(`]}`)
		if answered {
			for j := 0; j < calls; j++ {
				fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":"c%d_%d","content":"ok"}`, i, j)
			}
		}
	}
	b.WriteString(`],` + chatTools + `}`)
	return b.String()
}

// Huge histories cost bounded work: a clean one just under MaxBody is sent
// as it came; one past MaxBody passes unread, as every request body past
// the bound does; a repair that would grow the request past MaxBody is
// refused (history_too_large), nothing sent; and a turn of thousands of
// unanswered calls is repaired in one linear pass.
func TestHistoryBounded(t *testing.T) {
	t.Parallel()
	t.Run("clean under MaxBody", func(t *testing.T) {
		t.Parallel()
		body := chatHistory(24000, 2, true)
		if len(body) > MaxBody || len(body) < MaxBody/2 {
			t.Fatalf("the request is %d bytes, want just under MaxBody", len(body))
		}
		ex := runHistory(t, RepairHistory, histChat, body)
		if ex.status != http.StatusOK || len(ex.sent) != 1 || string(ex.sent[0]) != body || len(ex.events) != 0 {
			t.Fatalf("the client read %d, %d requests sent, %d events; want the request as it came and no event", ex.status, len(ex.sent), len(ex.events))
		}
		t.Logf("%d bytes, %d messages: sent as they came, 0 events", len(body), 1+24000*3)
	})
	t.Run("past MaxBody", func(t *testing.T) {
		t.Parallel()
		body := chatHistory(70000, 2, false)
		if len(body) <= MaxBody {
			t.Fatalf("the request is %d bytes, want past MaxBody", len(body))
		}
		ex := runHistory(t, RefuseHistory, histChat, body)
		// The fake provider keeps MaxBody+1 bytes of it and answers 413,
		// as a provider may.
		if len(ex.sent) != 1 || !bytes.HasPrefix([]byte(body), ex.sent[0]) || len(ex.sent[0]) <= MaxBody || len(ex.events) != 0 {
			t.Fatalf("%d requests sent, %d events; want it passed as it came (past the bound, not read)", len(ex.sent), len(ex.events))
		}
		t.Logf("%d bytes, 140000 unanswered calls, RefuseHistory: passed unread to the provider (which answered %d), as every request body past MaxBody", len(body), ex.status)
	})
	t.Run("repair past MaxBody", func(t *testing.T) {
		t.Parallel()
		body := chatHistory(1, 40000, false)
		ex := runHistory(t, RepairHistory, histChat, body)
		t.Logf("%d bytes, 40000 unanswered calls: the client read %d: %s", len(body), ex.status, ex.body)
		if ex.status != http.StatusUnprocessableEntity || len(ex.sent) != 0 || len(ex.events) != 0 ||
			!strings.Contains(string(ex.body), "messages[1]: history_too_large") {
			t.Fatalf("the client read %d, %d requests sent, %d events; want a 422 history_too_large and nothing sent", ex.status, len(ex.sent), len(ex.events))
		}
	})
	t.Run("thousands of repairs in one turn", func(t *testing.T) {
		t.Parallel()
		body := chatHistory(1, 5000, false)
		ex := runHistory(t, RepairHistory, histChat, body)
		n := 0
		for _, e := range ex.events {
			if e.Kind == guard.EventHistoryRepaired {
				n++
			}
		}
		if ex.status != http.StatusOK || len(ex.sent) != 1 || n != 5000 {
			t.Fatalf("the client read %d, %d requests sent, %d repairs; want 5000 repairs sent", ex.status, len(ex.sent), n)
		}
		if got := bytes.Count(ex.sent[0], []byte(`"role":"tool"`)); got != 5000 {
			t.Errorf("the provider received %d tool messages, want 5000", got)
		}
		t.Logf("%d bytes, 5000 unanswered calls: %d repairs, %d bytes sent", len(body), n, len(ex.sent[0]))
	})
}
