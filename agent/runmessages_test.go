package agent_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
)

func roles(msgs []llms.MessageContent) string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Role))
	}
	return strings.Join(out, " ")
}

// TestRunMessagesContinues: the second turn sends the model the first
// turn's transcript and the new question; its Result.Messages extend it;
// the system prompt is sent once; the caller's slice is not written.
func TestRunMessagesContinues(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(ping(), fakemodel.Text("pong received"), fakemodel.Text("yes"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{pingTool()}), agent.WithSystemPrompt("Be brief."))
	first, err := a.Run(context.Background(), "ping")
	if err != nil {
		t.Fatal(err)
	}
	history := append(slices.Clip(first.Messages), llms.TextParts(llms.ChatMessageTypeHuman, "did it work?"))
	history = slices.Grow(history, 8) // spare capacity RunMessages must not write into
	before := slices.Clone(history)
	second, err := a.RunMessages(context.Background(), history)
	if err != nil || second.Output != "yes" {
		t.Fatalf("RunMessages = %+v, %v; want Output yes", second, err)
	}
	const wantSent = "system human ai tool ai human"
	if got := roles(model.Requests()[2].Messages); got != wantSent {
		t.Errorf("RunMessages sent roles %q, want %q", got, wantSent)
	}
	if got, want := roles(second.Messages), wantSent+" ai"; got != want {
		t.Errorf("RunMessages Result.Messages roles = %q, want %q", got, want)
	}
	if !reflect.DeepEqual(history, before) || !reflect.DeepEqual(history[:cap(history)][len(history)], llms.MessageContent{}) {
		t.Errorf("RunMessages modified its input")
	}
	if second.ModelCalls != 1 || len(second.Steps) != 0 {
		t.Errorf("RunMessages: ModelCalls %d, %d steps; want 1, 0 (this run only)", second.ModelCalls, len(second.Steps))
	}
}

func TestRunMessagesSystemPrompt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		system string
		msgs   []llms.MessageContent
		want   string
	}{
		{"prepended", "S", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, "system human"},
		{"kept when present", "S", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "T"), llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, "system human"},
		{"none", "", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, "human"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := fakemodel.New(fakemodel.Text("ok"))
			if _, err := agent.New(model, toolstage.New(nil), agent.WithSystemPrompt(tc.system)).RunMessages(context.Background(), tc.msgs); err != nil {
				t.Fatal(err)
			}
			if got := roles(model.Requests()[0].Messages); got != tc.want {
				t.Errorf("RunMessages(%s) sent %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestRunMessagesEmpty(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Text("ok"))
	res, err := agent.New(model, toolstage.New(nil)).RunMessages(context.Background(), nil)
	if !errors.Is(err, agent.ErrNoMessages) || res != nil {
		t.Errorf("RunMessages(nil) = %v, %v; want nil, ErrNoMessages", res, err)
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("RunMessages(nil) called the model %d times, want 0", n)
	}
}

// TestWithCallOptions: the options reach every model call, re-asks
// included; per-run options win; the agent's tools are always offered.
func TestWithCallOptions(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("ping", `{"x": 1}`)), // re-asked: ping takes no x
		ping(),
		fakemodel.Text("done"),
	)
	other := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: "other"}}
	a := agent.New(model, toolstage.New([]toolstage.Tool{toolstage.NewTool("ping", "Pings.", func(context.Context, struct{}) (string, error) { return "pong", nil })}), agent.WithMiddleware(middleware.ToolArgValidation()), agent.WithCallOptions(llms.WithModel("m1"), llms.WithTemperature(0.2), nil, llms.WithTools([]llms.Tool{other})), agent.WithCallOptions(llms.WithMaxTokens(64)))
	if _, err := a.RunMessages(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "ping")}, llms.WithModel("m2"), nil); err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model calls = %d, want 3 (a re-ask, then the tool's result)", len(reqs))
	}
	for i, r := range reqs {
		o := r.Options
		if o.Model != "m2" || o.Temperature != 0.2 || o.MaxTokens != 64 || len(o.Tools) != 1 || o.Tools[0].Function.Name != "ping" {
			t.Errorf("request %d options: model %q, temperature %v, max tokens %d, tools %d; want m2, 0.2, 64, [ping]",
				i, o.Model, o.Temperature, o.MaxTokens, len(o.Tools))
		}
	}
	// Run uses the agent's options alone.
	model2 := fakemodel.New(fakemodel.Text("ok"))
	if _, err := agent.New(model2, toolstage.New(nil), agent.WithCallOptions(llms.WithModel("m1"))).Run(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	if got := model2.Requests()[0].Options; got.Model != "m1" || got.Tools != nil {
		t.Errorf("Run options: model %q, tools %v; want m1, none", got.Model, got.Tools)
	}
}

// TestWithCallOptionsStreaming: a streaming function given with
// WithCallOptions, or to one run, receives the model's text.
func TestWithCallOptionsStreaming(t *testing.T) {
	t.Parallel()
	for _, perRun := range []bool{false, true} {
		var chunks []string
		stream := llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
			chunks = append(chunks, string(b))
			return nil
		})
		model := fakemodel.New(ping(), fakemodel.Text("pong received"))
		var opts []any
		var runOpts []llms.CallOption
		if perRun {
			runOpts = append(runOpts, stream)
		} else {
			opts = append(opts, agent.WithCallOptions(stream))
		}
		res, err := build(model, []toolstage.Tool{pingTool()}, opts...).RunMessages(context.Background(),
			[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "ping")}, runOpts...)
		if err != nil || res.Output != "pong received" {
			t.Fatalf("RunMessages = %v, %v", res, err)
		}
		if got := strings.Join(chunks, ""); got != "pong received" {
			t.Errorf("streamed (per run %v) %q, want %q", perRun, got, "pong received")
		}
	}
}

// TestEmptyArgumentsInAgent: a tool without parameters called with ""
// reaches the tool, the step and the transcript as {}, as ToolArgValidation
// writes it back.
func TestEmptyArgumentsInAgent(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("ping", "")), fakemodel.Text("ok"))
	res, err := agent.New(model, toolstage.New([]toolstage.Tool{pingTool()}), agent.WithMiddleware(middleware.ToolArgValidation())).Run(context.Background(), "ping")
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Steps[0].Arguments; got != "{}" {
		t.Errorf("Step.Arguments = %q, want %q", got, "{}")
	}
	if got := res.Messages[1].Parts[0].(llms.ToolCall).FunctionCall.Arguments; got != "{}" {
		t.Errorf("transcript tool call arguments = %q, want %q", got, "{}")
	}
}

// TestRunMessagesConcurrentStreams: concurrent runs of one agent, each with
// its own streaming function, stream their own answer only.
func TestRunMessagesConcurrentStreams(t *testing.T) {
	t.Parallel()
	const runs = 16
	echo := fakemodel.Func(func(ctx context.Context, msgs []llms.MessageContent, opts llms.CallOptions) (*llms.ContentResponse, error) {
		text := "echo: " + msgs[len(msgs)-1].Parts[0].(llms.TextContent).Text
		if opts.StreamingFunc != nil {
			if err := opts.StreamingFunc(ctx, []byte(text)); err != nil {
				return nil, err
			}
		}
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: text}}}, nil
	})
	steps := make([]fakemodel.Step, runs)
	for i := range steps {
		steps[i] = echo
	}
	a := agent.New(fakemodel.New(steps...), toolstage.New([]toolstage.Tool{pingTool()}), agent.WithCallOptions(llms.WithModel("m")))
	got := make([]string, runs)
	errs := make(chan error, runs)
	for i := range runs {
		go func() {
			var b strings.Builder
			msg := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, strconv.Itoa(i))}
			_, err := a.RunMessages(context.Background(), msg, llms.WithStreamingFunc(func(_ context.Context, c []byte) error {
				b.Write(c)
				return nil
			}))
			got[i] = b.String()
			errs <- err
		}()
	}
	for range runs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range got {
		if want := "echo: " + strconv.Itoa(i); g != want {
			t.Errorf("run %d streamed %q, want %q", i, g, want)
		}
	}
}
