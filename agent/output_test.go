package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/retry"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// Verdict is the structured answer of the output tests.
type Verdict struct {
	Label string `json:"label" jsonschema:"spam or ham"`
	Score int    `json:"score"`
}

// Validate is enforced on every answer, like a typed tool's.
func (v Verdict) Validate() error {
	if v.Label != "spam" && v.Label != "ham" {
		return validation.FieldError("/label", `must be "spam" or "ham"`)
	}
	return nil
}

const (
	goodAnswer = `{"label":"spam","score":3}`
	badAnswer  = `{"label":"maybe","score":"high"}`
)

func answer(args string) fakemodel.Step {
	return fakemodel.ToolCalls(fakemodel.Call(agent.OutputToolName, args))
}

// lastMessage renders the last message of the model's i-th request.
func lastMessage(t *testing.T, m *fakemodel.Model, i int) string {
	t.Helper()
	reqs := m.Requests()
	if i >= len(reqs) {
		t.Fatalf("the model got %d requests, want more than %d", len(reqs), i)
	}
	r := render(reqs[i].Messages)
	return r[len(r)-1]
}

func TestOutputValidAnswer(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(answer(`{"label": "spam", "score": 3}`))
	a := agent.New(model, toolstage.New(nil), agent.WithOutputSchema(validation.Typed[Verdict]()))
	res, err := a.Run(context.Background(), "Classify: WIN A PRIZE")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Output != goodAnswer {
		t.Errorf("Output = %q, want %q (compact JSON)", res.Output, goodAnswer)
	}
	v, err := agent.Output[Verdict](res)
	if err != nil || v != (Verdict{"spam", 3}) {
		t.Errorf("Output[Verdict] = %+v, %v", v, err)
	}
	// The answer tool is offered with the schema, and is the only tool.
	tools := model.Requests()[0].Options.Tools
	if len(tools) != 1 || tools[0].Function.Name != agent.OutputToolName || tools[0].Function.Parameters == nil {
		t.Fatalf("tools sent = %+v, want the answer tool alone", tools)
	}
	diffLines(t, "transcript", render(res.Messages), []string{
		"human: Classify: WIN A PRIZE",
		`ai: call_1 final_answer({"label": "spam", "score": 3})`,
		"tool: call_1 final_answer -> " + errfmt.AnswerAccepted,
		"ai: " + goodAnswer,
	})
	if len(res.Steps) != 1 || res.Steps[0].Tool != agent.OutputToolName || res.Steps[0].Message != 1 || res.Steps[0].Err != nil {
		t.Errorf("Steps = %+v, want the answer's call", res.Steps)
	}
}

// With ToolArgValidation installed, an invalid answer is re-asked inside the
// model call, with the tool-argument feedback, and never reaches the
// transcript.
func TestOutputReaskedByToolArgValidation(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(answer(badAnswer), answer(goodAnswer))
	a := agent.New(model, toolstage.New(nil), agent.WithOutputSchema(validation.Typed[Verdict]()), agent.WithMiddleware(middleware.ToolArgValidation()))
	res, err := a.Run(context.Background(), "Classify")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Output != goodAnswer || res.ModelCalls != 2 || len(res.Steps) != 1 {
		t.Errorf("Output %q, ModelCalls %d, Steps %d; want the second answer, 2 calls, 1 step", res.Output, res.ModelCalls, len(res.Steps))
	}
	got := lastMessage(t, model, 1)
	if !strings.Contains(got, errfmt.PrefixInvalid+` for tool "final_answer"`) || !strings.Contains(got, "/score") {
		t.Errorf("re-ask's last message = %q, want the feedback", got)
	}
}

// Without ToolArgValidation, the agent checks the answer (schema and
// Validate) and re-asks in a new turn with the same feedback.
func TestOutputReaskedByAgent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, bad, want string }{
		{"schema", badAnswer, "/score"},
		{"Validate hook", `{"label":"maybe","score":1}`, `must be "spam" or "ham"`},
		{"not JSON", `{"label":`, "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := fakemodel.New(answer(tc.bad), answer(goodAnswer))
			a := agent.New(model, toolstage.New(nil), agent.WithOutputSchema(validation.Typed[Verdict]()))
			res, err := a.Run(context.Background(), "Classify")
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Output != goodAnswer {
				t.Errorf("Output = %q, want %q", res.Output, goodAnswer)
			}
			var ve *validation.Error
			if len(res.Steps) != 2 || !errors.As(res.Steps[0].Err, &ve) {
				t.Fatalf("Steps = %+v, want the rejected answer with a *validation.Error, then the answer", res.Steps)
			}
			got := lastMessage(t, model, 1)
			if want := "tool: call_1 final_answer -> " + errfmt.Feedback(ve); got != want {
				t.Errorf("re-ask's last message = %q, want %q", got, want)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("feedback %q does not mention %q", got, tc.want)
			}
		})
	}
}

func TestOutputTextAskedAgain(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Text("It is spam."), answer(goodAnswer))
	a := agent.New(model, toolstage.New(nil), agent.WithOutputSchema(validation.Typed[Verdict]()))
	res, err := a.Run(context.Background(), "Classify")
	if err != nil || res.Output != goodAnswer {
		t.Fatalf("Run = %q, %v; want the answer", res.Output, err)
	}
	if got, want := lastMessage(t, model, 1), "human: "+errfmt.AnswerInText(agent.OutputToolName); got != want {
		t.Errorf("re-ask's last message = %q, want %q", got, want)
	}
}

// A run that never gets a valid answer fails with ErrNoOutput and the
// partial result, whose Output is empty: never the text or the invalid
// answer in its place.
func TestOutputExhausted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps []fakemodel.Step
		opts  []any
		as    any
	}{
		{"text", []fakemodel.Step{fakemodel.Text("spam"), fakemodel.Text("spam!"), fakemodel.Text("SPAM")}, nil, nil},
		{"invalid, agent", []fakemodel.Step{answer(badAnswer), answer(badAnswer), answer(badAnswer)}, nil, new(*validation.Error)},
		{"invalid, ToolArgValidation fails open", []fakemodel.Step{
			answer(badAnswer), answer(badAnswer), answer(badAnswer), // turn 1: ToolArgValidation gives up
			answer(badAnswer), answer(badAnswer), answer(badAnswer),
			answer(badAnswer), answer(badAnswer), answer(badAnswer),
		}, []any{agent.WithMiddleware(middleware.ToolArgValidation())}, new(*validation.Error)},
		{"mixed", []fakemodel.Step{fakemodel.Text("spam"), answer(badAnswer), fakemodel.Text("spam")}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := fakemodel.New(tc.steps...)
			a := build(model, nil, append(tc.opts, agent.WithOutputSchema(validation.Typed[Verdict]()))...)
			res, err := a.Run(context.Background(), "Classify")
			if !errors.Is(err, agent.ErrNoOutput) {
				t.Fatalf("Run error = %v, want ErrNoOutput", err)
			}
			if tc.as != nil && !errors.As(err, tc.as) {
				t.Errorf("Run error = %v, want it to wrap %T", err, tc.as)
			}
			if res == nil || res.Output != "" || len(res.Messages) < 2 {
				t.Fatalf("Result = %+v, want the partial result without output", res)
			}
			if model.Remaining() != 0 {
				t.Errorf("%d scripted answers left: the run gave up too early", model.Remaining())
			}
			if _, oerr := agent.Output[Verdict](res); !errors.Is(oerr, agent.ErrNoOutput) {
				t.Errorf("Output[Verdict] error = %v, want ErrNoOutput", oerr)
			}
		})
	}
}

// The rule for an answer that arrives with other tool calls.
func TestOutputWithSiblings(t *testing.T) {
	t.Parallel()
	ran := func(n *atomic.Int32, fail bool) toolstage.Tool {
		return toolstage.NewTool("lookup", "Looks up.", func(context.Context, WeatherArgs) (string, error) {
			n.Add(1)
			if fail {
				return "", errors.New("lookup is down")
			}
			return "found", nil
		})
	}
	t.Run("siblings succeed: the answer is taken", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("lookup", `{"city":"Paris"}`), fakemodel.Call(agent.OutputToolName, goodAnswer)))
		a := agent.New(model, toolstage.New([]toolstage.Tool{ran(&n, false)}), agent.WithOutputSchema(validation.Typed[Verdict]()))
		res, err := a.Run(context.Background(), "Classify")
		if err != nil || res.Output != goodAnswer || n.Load() != 1 {
			t.Fatalf("Run = %q, %v, lookup ran %d times; want the answer and lookup run once", res.Output, err, n.Load())
		}
		diffLines(t, "transcript", render(res.Messages), []string{
			"human: Classify",
			`ai: call_1 lookup({"city":"Paris"})`,
			"tool: call_1 lookup -> found",
			"ai: call_2 final_answer(" + goodAnswer + ")",
			"tool: call_2 final_answer -> " + errfmt.AnswerAccepted,
			"ai: " + goodAnswer,
		})
	})
	t.Run("a sibling fails: the answer is asked again", func(t *testing.T) {
		t.Parallel()
		var n atomic.Int32
		model := fakemodel.New(
			fakemodel.ToolCalls(fakemodel.Call("lookup", `{"city":"Paris"}`), fakemodel.Call(agent.OutputToolName, goodAnswer)),
			answer(`{"label":"ham","score":0}`))
		a := agent.New(model, toolstage.New([]toolstage.Tool{ran(&n, true)}), agent.WithOutputSchema(validation.Typed[Verdict]()))
		res, err := a.Run(context.Background(), "Classify")
		if err != nil || res.Output != `{"label":"ham","score":0}` {
			t.Fatalf("Run = %q, %v; want the second answer", res.Output, err)
		}
		if got, want := lastMessage(t, model, 1), "tool: call_2 final_answer -> "+errfmt.AnswerNotAccepted(agent.OutputToolName); got != want {
			t.Errorf("re-ask's last message = %q, want %q", got, want)
		}
		if len(res.Steps) != 3 || res.Steps[2].Turn != 2 {
			t.Errorf("Steps = %+v, want the two calls of turn 1 and the answer of turn 2", res.Steps)
		}
		checkStepMessages(t, res)
	})
	t.Run("two answers: the first is considered", func(t *testing.T) {
		t.Parallel()
		model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(agent.OutputToolName, goodAnswer), fakemodel.Call(agent.OutputToolName, `{"label":"ham","score":1}`)))
		a := agent.New(model, toolstage.New(nil), agent.WithOutputSchema(validation.Typed[Verdict]()))
		res, err := a.Run(context.Background(), "Classify")
		if err != nil || res.Output != goodAnswer {
			t.Fatalf("Run = %q, %v; want the first answer", res.Output, err)
		}
		if got := toolMessages(res.Messages); len(got) != 2 || got[1] != errfmt.AnswerIgnored {
			t.Errorf("tool messages = %q, want the second answer ignored", got)
		}
	})
}

// A limit reached before the answer is an error, never an empty success or
// the limit's text taken as the answer.
func TestOutputLimits(t *testing.T) {
	t.Parallel()
	lookup := toolstage.NewTool("lookup", "Looks up.", func(context.Context, WeatherArgs) (string, error) { return "found", nil })
	call := func() fakemodel.Step { return fakemodel.ToolCalls(fakemodel.Call("lookup", `{"city":"Paris"}`)) }
	for _, tc := range []struct {
		name  string
		mw    middleware.Middleware
		steps []fakemodel.Step
	}{
		{"ModelCallLimit ExitEnd, after a tool call", middleware.ModelCallLimit(guard.WithRunLimit(1)), []fakemodel.Step{call()}},
		{"ModelCallLimit ExitEnd, after a text answer", middleware.ModelCallLimit(guard.WithRunLimit(1)), []fakemodel.Step{fakemodel.Text("spam")}},
		{"ToolCallLimit ExitEnd", middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd)), []fakemodel.Step{call(), call()}},
		{"ToolCallLimit ExitContinue falls back to ExitEnd", middleware.ToolCallLimit(guard.WithRunLimit(1)), []fakemodel.Step{call(), call(), call()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := fakemodel.New(tc.steps...)
			a := agent.New(model, toolstage.New([]toolstage.Tool{lookup}), agent.WithMiddleware(tc.mw), agent.WithOutputSchema(validation.Typed[Verdict]()))
			res, err := a.Run(context.Background(), "Classify")
			var le *guard.LimitExceededError
			if !errors.Is(err, agent.ErrNoOutput) || !errors.As(err, &le) {
				t.Fatalf("Run error = %v, want ErrNoOutput wrapping the *LimitExceededError", err)
			}
			if res.Output != "" {
				t.Errorf("Output = %q, want none", res.Output)
			}
		})
	}
	// Without an output schema, the limit's text is the answer, as before.
	model := fakemodel.New(call())
	res, err := agent.New(model, toolstage.New([]toolstage.Tool{lookup}), agent.WithMiddleware(middleware.ModelCallLimit(guard.WithRunLimit(1)))).Run(context.Background(), "Classify")
	if err != nil || !strings.HasPrefix(res.Output, errfmt.PrefixModelLimitReached) {
		t.Errorf("without a schema: Run = %q, %v; want the limit's text", res.Output, err)
	}
}

// ToolCallLimit counts no answer: a run whose tool calls are used up can
// still answer, in the same batch as a blocked call or after it.
func TestOutputNotCountedByToolCallLimit(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	lookup := toolstage.NewTool("lookup", "Looks up.", func(context.Context, WeatherArgs) (string, error) { n.Add(1); return "found", nil })
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("lookup", `{"city":"Paris"}`)),
		fakemodel.ToolCalls(fakemodel.Call("lookup", `{"city":"Rome"}`)), // blocked: re-asked
		answer(goodAnswer),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{lookup}), agent.WithMiddleware(middleware.ToolCallLimit(guard.WithRunLimit(1))), agent.WithOutputSchema(validation.Typed[Verdict]()))
	res, err := a.Run(context.Background(), "Classify")
	if err != nil || res.Output != goodAnswer || n.Load() != 1 {
		t.Fatalf("Run = %q, %v, lookup ran %d; want the answer after one lookup", res.Output, err, n.Load())
	}
	// Limiting the answer tool by name counts it.
	model = fakemodel.New(answer(goodAnswer))
	a = agent.New(model, toolstage.New(nil), agent.WithMiddleware(middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithThreadLimit(1), guard.WithToolName(agent.OutputToolName))), agent.WithOutputSchema(validation.Typed[Verdict]()))
	ctx := guard.WithThread(context.Background(), "t1")
	if _, err := a.Run(ctx, "Classify"); err != nil {
		t.Fatalf("first run: %v", err)
	}
	model.Append(answer(goodAnswer), answer(goodAnswer))
	if _, err := a.Run(ctx, "Classify again"); !errors.Is(err, agent.ErrNoOutput) {
		t.Errorf("second run on the thread: %v, want ErrNoOutput (the thread's one answer is used)", err)
	}
}

func TestOutputModelRetry(t *testing.T) {
	t.Parallel()
	err503 := errors.New("API returned unexpected status code: 503: overloaded")
	zero := guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })
	t.Run("a transient failure is retried", func(t *testing.T) {
		t.Parallel()
		model := fakemodel.New(fakemodel.Fail(err503), answer(goodAnswer))
		a := agent.New(model, toolstage.New(nil), agent.WithMiddleware(middleware.ModelRetry(zero)), agent.WithOutputSchema(validation.Typed[Verdict]()))
		res, err := a.Run(context.Background(), "Classify")
		if err != nil || res.Output != goodAnswer {
			t.Fatalf("Run = %q, %v", res.Output, err)
		}
	})
	t.Run("ContinueOnFailure's text is not an answer", func(t *testing.T) {
		t.Parallel()
		model := fakemodel.New(fakemodel.Fail(err503), fakemodel.Fail(err503))
		a := agent.New(model, toolstage.New(nil), agent.WithMiddleware(middleware.ModelRetry(zero, guard.WithMaxRetries(1),
			guard.WithOnFailure(guard.ContinueOnFailure))), agent.WithOutputSchema(validation.Typed[Verdict]()))
		res, err := a.Run(context.Background(), "Classify")
		var re *retry.Error
		if !errors.Is(err, agent.ErrNoOutput) || !errors.As(err, &re) || res.Output != "" {
			t.Fatalf("Run = %q, %v; want ErrNoOutput wrapping the *retry.Error", res.Output, err)
		}
	})
}

func TestOutputMaxIterations(t *testing.T) {
	t.Parallel()
	lookup := toolstage.NewTool("lookup", "Looks up.", func(context.Context, WeatherArgs) (string, error) { return "found", nil })
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("lookup", `{"city":"Paris"}`)))
	a := agent.New(model, toolstage.New([]toolstage.Tool{lookup}), agent.WithMaxIterations(1), agent.WithOutputSchema(validation.Typed[Verdict]()))
	_, err := a.Run(context.Background(), "Classify")
	if !errors.Is(err, agent.ErrNoOutput) || !errors.Is(err, agent.ErrMaxIterations) {
		t.Errorf("Run error = %v, want ErrNoOutput and ErrMaxIterations", err)
	}
}

// A Direct result ends the run only as a valid answer.
func TestOutputDirect(t *testing.T) {
	t.Parallel()
	direct := func(content string) toolstage.ToolMiddleware {
		return toolstage.ToolFunc(func(toolstage.ToolHandler) toolstage.ToolHandler {
			return func(context.Context, *toolstage.ToolCall) (*toolstage.ToolResult, error) {
				return &toolstage.ToolResult{Content: content, Direct: true}, nil
			}
		})
	}
	lookup := toolstage.NewTool("lookup", "Looks up.", func(context.Context, WeatherArgs) (string, error) { return "found", nil })
	for _, tc := range []struct {
		content string
		ok      bool
	}{{`{"label": "ham", "score": 2}`, true}, {"found it", false}, {`{"label":"maybe","score":2}`, false}} {
		model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("lookup", `{"city":"Paris"}`)))
		a := agent.New(model, toolstage.New([]toolstage.Tool{lookup}, toolstage.WithToolMiddleware(direct(tc.content))), agent.WithOutputSchema(validation.Typed[Verdict]()))
		res, err := a.Run(context.Background(), "Classify")
		switch {
		case tc.ok && (err != nil || res.Output != `{"label":"ham","score":2}`):
			t.Errorf("Direct %q: Run = %q, %v; want it as the answer", tc.content, res.Output, err)
		case !tc.ok && (!errors.Is(err, agent.ErrNoOutput) || res.Output != ""):
			t.Errorf("Direct %q: Run = %q, %v; want ErrNoOutput", tc.content, res.Output, err)
		}
	}
}

func TestOutputMisconfigured(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fn   func()
		want string
	}{
		{"nil schema", func() { agent.WithOutputSchema(nil) }, "nil"},
		{"not an object", func() { agent.WithOutputSchema(map[string]any{"type": "array"}) }, `not "object"`},
		{"does not compile", func() { agent.WithOutputSchema(`{"type": 12}`) }, "does not compile"},
		{"a tool has the answer tool's name", func() {
			t := toolstage.NewTool(agent.OutputToolName, "Mine.", func(context.Context, WeatherArgs) (string, error) { return "", nil })
			agent.New(fakemodel.New(), toolstage.New([]toolstage.Tool{t}), agent.WithOutputSchema(validation.Typed[Verdict]()))
		}, "Renamed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), tc.want) {
					t.Errorf("panic = %v, want one mentioning %q", p, tc.want)
				}
			}()
			tc.fn()
		})
	}
	// A raw JSON Schema works as well as a typed one.
	model := fakemodel.New(answer(`{"n": 1}`))
	res, err := agent.New(model, toolstage.New(nil), agent.WithOutputSchema(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)).Run(context.Background(), "Count")
	if err != nil || res.Output != `{"n":1}` {
		t.Errorf("raw schema: Run = %q, %v", res.Output, err)
	}
	if _, err := agent.Output[Verdict](&agent.Result{Output: `{"label": 1}`}); err == nil || errors.Is(err, agent.ErrNoOutput) {
		t.Errorf("Output of a mistyped answer: %v, want a decode error", err)
	}
}

// Streaming through the agent with ToolArgValidation: a rejected answer's
// tool-call chunk is held and dropped; only the accepted answer is
// streamed, once, as a final_answer tool-call chunk.
func TestOutputStreamsOnlyTheAcceptedAnswer(t *testing.T) {
	t.Parallel()
	streamed := func(id, args string) fakemodel.Step {
		return fakemodel.Func(func(ctx context.Context, _ []llms.MessageContent, o llms.CallOptions) (*llms.ContentResponse, error) {
			delta, _ := json.Marshal([]map[string]any{{"id": id, "type": "function",
				"function": map[string]string{"name": agent.OutputToolName, "arguments": args}}})
			if err := o.StreamingFunc(ctx, delta); err != nil {
				return nil, err
			}
			return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
				{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: agent.OutputToolName, Arguments: args}}}}}}, nil
		})
	}
	model := fakemodel.New(streamed("c1", badAnswer), streamed("c2", goodAnswer))
	a := agent.New(model, toolstage.New(nil), agent.WithOutputSchema(validation.Typed[Verdict]()), agent.WithMiddleware(middleware.ToolArgValidation()))
	var mu sync.Mutex
	var chunks []string
	res, err := a.RunMessages(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Classify")},
		llms.WithStreamingFunc(func(_ context.Context, c []byte) error {
			mu.Lock()
			defer mu.Unlock()
			chunks = append(chunks, string(c))
			return nil
		}))
	if err != nil || res.Output != goodAnswer {
		t.Fatalf("Run = %q, %v", res.Output, err)
	}
	if len(chunks) != 1 || !strings.Contains(chunks[0], `"c2"`) || strings.Contains(strings.Join(chunks, ""), "maybe") {
		t.Errorf("streamed %q, want only the accepted answer c2", chunks)
	}
}

// A sub-agent run inside a tool of an agent with an output schema is a run
// of its own: the parent's answer tool is not its, and its ToolCallLimit
// counts its own tool of that name (which New allows without an output
// schema) like any other.
func TestOutputAnswerToolNotInheritedBySubAgent(t *testing.T) {
	t.Parallel()
	var subRuns atomic.Int32
	own := toolstage.NewTool(agent.OutputToolName, "The sub-agent's own tool of that name.", func(context.Context, struct{}) (string, error) {
		subRuns.Add(1)
		return "done", nil
	})
	subModel := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call(agent.OutputToolName, `{}`)),
		fakemodel.ToolCalls(fakemodel.Call(agent.OutputToolName, `{}`)),
		fakemodel.Text("sub done"),
	)
	sub := agent.New(subModel, toolstage.New([]toolstage.Tool{own}), agent.WithMiddleware(
		middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError))))
	delegate := toolstage.NewTool("delegate", "Runs the sub-agent.", func(ctx context.Context, _ struct{}) (string, error) {
		res, err := sub.Run(ctx, "go")
		if err != nil {
			return "", err
		}
		return res.Output, nil
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("delegate", `{}`)), answer(goodAnswer))
	a := agent.New(model, toolstage.New([]toolstage.Tool{delegate}), agent.WithOutputSchema(validation.Typed[Verdict]()))
	if _, err := a.Run(context.Background(), "classify"); err != nil {
		t.Fatal(err)
	}
	if n := subRuns.Load(); n != 1 {
		t.Errorf("the sub-agent's %s ran %d times under a run limit of 1", agent.OutputToolName, n)
	}
}
