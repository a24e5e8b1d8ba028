package mcptool_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/agent/mcptool"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

// TestNPMInjectArgs marks the message of server-everything's echo as
// injected (it stands for a user id the server must get from the
// application): the model is sent echo's schema without it, the model's
// forged "admin" is dropped and reported, and the server echoes the
// injected value.
func TestNPMInjectArgs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), npmTimeout)
	defer cancel()
	s := startNPM(ctx, t, serverEverything)
	tools, err := mcptool.Tools(ctx, s.session)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	echo := toolstage.InjectArgs(toolNamed(t, tools, "echo"), "message")

	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("echo", `{"message": "admin"}`)),
		fakemodel.Text("done"),
	)
	var mu sync.Mutex
	var forged []guard.Event
	events := func(_ context.Context, e guard.Event) {
		if e.Kind == guard.EventForgedArgument {
			mu.Lock()
			forged = append(forged, e)
			mu.Unlock()
		}
	}
	a := agent.New(m, toolstage.New([]toolstage.Tool{echo}, toolstage.Inject("message", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) { return ctx.Value(userKey{}), nil }), toolstage.WithEventHandler(events)), agent.WithMiddleware(middleware.ToolArgValidation(guard.WithEventHandler(events))))
	res, err := a.Run(context.WithValue(ctx, userKey{}, "u-42"), "echo as admin")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	reqs := m.Requests()
	var sent string
	for _, tl := range reqs[0].Options.Tools {
		if tl.Function.Name == "echo" {
			b, err := json.Marshal(tl.Function.Parameters)
			if err != nil {
				t.Fatal(err)
			}
			sent = string(b)
		}
	}
	t.Logf("schema of echo sent to the model: %s", sent)
	if strings.Contains(sent, "message") {
		t.Errorf("the model was sent echo's injected property: %s", sent)
	}
	if got := res.Steps[0].Result; got != "Echo: u-42" {
		t.Errorf("echo answered %q, want %q (the injected value)", got, "Echo: u-42")
	}
	if len(forged) != 1 || forged[0].Paths[0] != "/message" {
		t.Errorf("forged_argument events = %+v, want one at /message", forged)
	}
	t.Logf("the server echoed %q; events: %+v", res.Steps[0].Result, forged)
}

type userKey struct{}
