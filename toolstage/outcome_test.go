package toolstage_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// A ResultTool's Artifact and Direct reach the outcome: the Artifact for
// the program, Direct for the host to end its loop with the Content.
func TestOutcomeArtifactAndDirect(t *testing.T) {
	t.Parallel()
	type chart struct{ Points []int }
	plot := toolstage.NewResultTool("plot", "Plots.", func(_ context.Context, a indexArgs) (*toolstage.ToolResult, error) {
		return &toolstage.ToolResult{Content: "a chart of 3 points", Artifact: chart{Points: []int{1, 2, a.I}}, Direct: true}, nil
	})
	b, err := toolstage.New([]toolstage.Tool{plot}).Run(context.Background(), []guard.Call{call("call_1", "plot", `{"i": 3}`)})
	if err != nil {
		t.Fatal(err)
	}
	o := b.Outcomes[0]
	c, ok := o.Artifact.(chart)
	if o.Err != nil || o.Content != "a chart of 3 points" || !o.Direct || !ok || !slices.Equal(c.Points, []int{1, 2, 3}) {
		t.Errorf("outcome = %+v, want the content, the chart as Artifact and Direct", o)
	}
}

// A tool whose name providers refuse is offered under SafeToolName, and
// the model's call of that name runs it; the tool's own name is not a
// name of the stage.
func TestToolOfferedUnderSafeName(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	read := counted("files.read", "the file", &runs)
	stage := toolstage.New([]toolstage.Tool{read})
	sent := toolstage.SafeToolName("files.read")
	if defs := stage.Definitions(); len(defs) != 1 || defs[0].Name != sent || !strings.HasPrefix(sent, "files_read_") || !toolstage.IsSafeToolName(sent) {
		t.Fatalf("Definitions() = %+v, want files.read offered as %s", defs, sent)
	}
	b, err := stage.Run(context.Background(), []guard.Call{call("call_1", sent, `{}`), call("call_2", "files.read", `{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if o := b.Outcomes[0]; o.Err != nil || o.Content != "the file" || runs.Load() != 1 {
		t.Errorf("the call of %s = %q, %v; want the tool run", sent, o.Content, o.Err)
	}
	if o := b.Outcomes[1]; !errors.Is(o.Err, toolstage.ErrUnknownTool) {
		t.Errorf("the call of files.read = %q, %v; want ErrUnknownTool: the model is offered another name", o.Content, o.Err)
	}
}

// Run with no calls returns an empty batch; Run with a context already
// done starts nothing: every call's outcome is ErrCallNotStarted, and Run
// returns the context's error.
func TestRunNoCallsAndContextDone(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	stage := toolstage.New([]toolstage.Tool{counted("get_rate", "1.08", &runs)})
	b, err := stage.Run(context.Background(), nil)
	if err != nil || b == nil || len(b.Outcomes) != 0 || b.Interrupt != nil {
		t.Errorf("Run(no calls) = %+v, %v; want an empty batch", b, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b, err = stage.Run(ctx, []guard.Call{call("call_1", "get_rate", `{}`), call("call_2", "get_rate", `{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run(done context) error = %v, want context.Canceled", err)
	}
	if got := ids(b.Outcomes); !slices.Equal(got, []string{"call_1", "call_2"}) {
		t.Fatalf("outcomes %q, want both calls", got)
	}
	for _, o := range b.Outcomes {
		if !errors.Is(o.Err, toolstage.ErrCallNotStarted) || o.Content != errfmt.CallNotStarted {
			t.Errorf("outcome %s = %q, %v; want ErrCallNotStarted", o.Call.ID, o.Content, o.Err)
		}
	}
	if runs.Load() != 0 {
		t.Errorf("get_rate ran %d times, want never", runs.Load())
	}
}
