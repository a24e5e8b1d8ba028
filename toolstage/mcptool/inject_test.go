package mcptool_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/mcptool"
)

// TestNPMInjectArgs marks the message of server-everything's echo as
// injected (it stands for a user id the server must get from the
// application): the stage offers the model echo's schema without it, the
// model's forged "admin" is dropped and reported, and the server echoes the
// injected value. It drives a toolstage.Stage directly, as an openai-go or
// anthropic-sdk-go loop would.
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

	var mu sync.Mutex
	var forged []guard.Event
	events := func(_ context.Context, e guard.Event) {
		if e.Kind == guard.EventForgedArgument {
			mu.Lock()
			forged = append(forged, e)
			mu.Unlock()
		}
	}
	stage := toolstage.New([]toolstage.Tool{echo},
		toolstage.Inject("message", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) { return ctx.Value(userKey{}), nil }),
		toolstage.WithEventHandler(events))

	var sent string
	for _, d := range stage.Definitions() {
		if d.Name == "echo" {
			sent = string(d.Parameters)
		}
	}
	t.Logf("schema of echo offered to the model: %s", sent)
	if sent == "" || strings.Contains(sent, "message") {
		t.Errorf("the model is offered echo's schema %q, want one without its injected property", sent)
	}

	run := stage.Scope(context.WithValue(ctx, userKey{}, "u-42"))
	batch, err := stage.Run(run, []guard.Call{{ID: "call_1", Name: "echo", Args: []byte(`{"message": "admin"}`)}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(batch.Outcomes) != 1 {
		t.Fatalf("Run() outcomes = %+v, want one", batch.Outcomes)
	}
	if o := batch.Outcomes[0]; o.Err != nil || o.Content != "Echo: u-42" {
		t.Errorf("echo answered %q, %v; want %q (the injected value)", o.Content, o.Err, "Echo: u-42")
	}
	if call := string(batch.Outcomes[0].Call.Args); strings.Contains(call, "admin") {
		t.Errorf("the outcome's call, which the transcript records, holds the forged value: %s", call)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(forged) != 1 || forged[0].Paths[0] != "/message" {
		t.Errorf("forged_argument events = %+v, want one at /message", forged)
	}
	t.Logf("the server echoed %q; events: %+v", batch.Outcomes[0].Content, forged)
}

type userKey struct{}
