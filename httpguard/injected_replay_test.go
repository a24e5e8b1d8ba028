package httpguard

import (
	"context"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// A value the model sends for an injected argument (guard.WithInjectedArgs,
// as toolstage's Scope sets) in arguments from which no key can be dropped
// — truncated JSON, Python literals, data after the object, an array, a
// string — is never sent back to the provider: the re-ask replays the
// rejected call with {} for its arguments, in every protocol, sync and
// streamed. (Before, the wire replayed them as sent, forged value and all.)
func TestReaskNeverReplaysForgedInBrokenArguments(t *testing.T) {
	t.Parallel()
	for _, c := range wireCases(t) {
		for _, bad := range []string{
			`{"city": "Paris", "user_id": "u-attacker"`,
			`{'city': 'Paris', 'user_id': 'u-attacker'}`,
			`{"city": "Paris"} {"user_id": "u-attacker"}`,
			`[{"city": "Paris", "user_id": "u-attacker"}]`,
			`"city=Paris, user_id=u-attacker"`,
			`{"city": "Paris", "\u0075ser_id": "u-attacker",`,
		} {
			t.Run(c.name+" "+bad, func(t *testing.T) {
				t.Parallel()
				srv := fp.New(
					fp.Reply(fp.Call("get_weather", bad)),
					fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
				defer srv.Close()
				ctx := guard.WithInjectedArgs(context.Background(), map[string][]string{"get_weather": {"user_id"}})
				ex := do(t, New(nil, ToolArgValidation()), ctx, srv.URL+c.url, c.body)
				if calls := callsOf(t, c.w, clientRead(t, c, ex)); len(calls) != 1 || !sameJSON(calls[0].Args, []byte(`{"city":"Paris"}`)) {
					t.Fatalf("the client reads %+v, want the corrected call", calls)
				}
				reqs := srv.Requests()
				if len(reqs) != 2 {
					t.Fatalf("%d requests, want 2", len(reqs))
				}
				if strings.Contains(string(reqs[1].Body), "u-attacker") {
					t.Errorf("the re-ask replays the forged value:\n%s", reqs[1].Body)
				}
			})
		}
	}
}
