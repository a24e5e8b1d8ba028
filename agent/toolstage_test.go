package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// eventLog collects events from the agent's WithEventHandler.
type eventLog struct {
	mu     sync.Mutex
	events []guard.Event
}

func (l *eventLog) handle(_ context.Context, e guard.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) kinds() []guard.EventKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ks []guard.EventKind
	for _, e := range l.events {
		ks = append(ks, e.Kind)
	}
	return ks
}

func (l *eventLog) find(k guard.EventKind) (guard.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Kind == k {
			return e, true
		}
	}
	return guard.Event{}, false
}

// toolMessages returns the content of every tool message of msgs.
func toolMessages(msgs []llms.MessageContent) []string {
	var out []string
	for _, m := range msgs {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				out = append(out, r.Content)
			}
		}
	}
	return out
}

func TestToolMiddlewareOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var trace []string
	note := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
	layer := func(name string) toolstage.ToolMiddleware {
		return toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
			return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
				note(name + " in")
				res, err := next(ctx, call)
				note(name + " out")
				return res, err
			}
		})
	}
	tool := toolstage.NewTool("get_weather", "Weather.", func(context.Context, WeatherArgs) (string, error) {
		note("tool")
		return "sunny", nil
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city":"Paris"}`)), fakemodel.Text("done"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(layer("a"), nil, layer("b"))))
	if _, err := a.Run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a in", "b in", "tool", "b out", "a out"}; !slices.Equal(trace, want) {
		t.Errorf("order = %v, want %v", trace, want)
	}
}

// A policy middleware that refuses a tool: the tool never runs, the model
// reads the refusal, the run goes on, and tool_denied is reported.
func TestToolMiddlewareDenies(t *testing.T) {
	t.Parallel()
	ran := false
	tool := toolstage.NewTool("delete_user", "Deletes.", func(context.Context, struct {
		ID string `json:"id"`
	}) (string, error) {
		ran = true
		return "deleted", nil
	})
	deny := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			if call.Name == "delete_user" {
				return nil, errors.New("policy: delete_user needs an administrator")
			}
			return next(ctx, call)
		}
	})
	var log eventLog
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("delete_user", `{"id":"u1"}`)), fakemodel.Text("I could not."))
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(deny), toolstage.WithEventHandler(log.handle)))
	res, err := a.Run(context.Background(), "delete u1")
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if ran {
		t.Error("the denied tool ran")
	}
	if got := toolMessages(res.Messages); len(got) != 1 || !strings.Contains(got[0], "needs an administrator") {
		t.Errorf("tool messages = %q, want the refusal", got)
	}
	if e, ok := log.find(guard.EventToolDenied); !ok || e.Tool != "delete_user" || e.CallID != "call_1" {
		t.Errorf("events = %v, want tool_denied for delete_user call_1", log.kinds())
	}
}

// A middleware that replaces arguments: valid replacements reach the tool
// and Step records both; invalid ones never reach it, and the model is not
// shown their violations.
func TestToolMiddlewareRewritesArguments(t *testing.T) {
	t.Parallel()
	rewrite := func(args string) toolstage.ToolMiddleware {
		return toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
			return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
				call.Args = json.RawMessage(args)
				return next(ctx, call)
			}
		})
	}
	for _, tc := range []struct {
		name, args string
		wantRan    bool
	}{
		{"valid", `{"city":"Paris","units":"metric"}`, true},
		{"schema rejects", `{"city":"Paris","units":7}`, false},
		{"not an object", `["Paris"]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []WeatherArgs
			var mu sync.Mutex
			tool := toolstage.NewTool("get_weather", "Weather.", func(_ context.Context, w WeatherArgs) (string, error) {
				mu.Lock()
				got = append(got, w)
				mu.Unlock()
				return "sunny", nil
			})
			var log eventLog
			model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city":"Paris"}`)), fakemodel.Text("done"))
			a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(rewrite(tc.args)), toolstage.WithEventHandler(log.handle)), agent.WithMiddleware(middleware.ToolArgValidation()))
			res, err := a.Run(context.Background(), "weather")
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			step := res.Steps[0]
			if step.ModelArguments != `{"city":"Paris"}` {
				t.Errorf("ModelArguments = %s, want the model's", step.ModelArguments)
			}
			if !tc.wantRan {
				if len(got) != 0 {
					t.Fatalf("tool ran with %+v; a rewrite its schema rejects must never reach it", got)
				}
				var rejected *toolstage.ArgsRejectedError
				var ve *validation.Error
				if !errors.As(step.Err, &rejected) || !errors.As(step.Err, &ve) {
					t.Errorf("Step.Err = %v, want an *ArgsRejectedError wrapping the *validation.Error", step.Err)
				}
				msg := toolMessages(res.Messages)[0]
				if strings.Contains(msg, "units") || strings.Contains(msg, "7") || strings.Contains(msg, "Paris") {
					t.Errorf("the model read %q: it must not be shown the replaced arguments' violations", msg)
				}
				if _, ok := log.find(guard.EventArgsRejected); !ok {
					t.Errorf("events = %v, want args_rejected", log.kinds())
				}
				return
			}
			if want := []WeatherArgs{{City: "Paris", Units: "metric"}}; !slices.Equal(got, want) {
				t.Errorf("tool got %+v, want %+v", got, want)
			}
			if step.Arguments != tc.args {
				t.Errorf("Arguments = %s, want %s", step.Arguments, tc.args)
			}
			if e, ok := log.find(guard.EventArgsRewritten); !ok || !slices.Equal(e.Paths, []string{"/units"}) {
				t.Errorf("args_rewritten event = %+v (found %v), want Paths [/units]", e, ok)
			}
			// The transcript keeps what the model sent.
			if r := render(res.Messages); !strings.Contains(strings.Join(r, "\n"), `get_weather({"city":"Paris"})`) {
				t.Errorf("transcript = %v, want the model's own call", r)
			}
		})
	}
}

func TestToolResultDirectEndsRun(t *testing.T) {
	t.Parallel()
	tool := toolstage.NewTool("lookup", "Looks up.", func(context.Context, struct {
		Q string `json:"q"`
	}) (string, error) {
		return "42", nil
	})
	direct := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			res, err := next(ctx, call)
			if err == nil {
				res.Direct, res.Artifact = true, map[string]int{"answer": 42}
			}
			return res, err
		}
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("lookup", `{"q":"answer"}`)), fakemodel.Text("never asked"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(direct)))
	res, err := a.Run(context.Background(), "q")
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if res.Output != "42" || res.ModelCalls != 1 {
		t.Errorf("Output = %q after %d model calls, want 42 after 1", res.Output, res.ModelCalls)
	}
	if a, ok := res.Steps[0].Artifact.(map[string]int); !ok || a["answer"] != 42 {
		t.Errorf("Artifact = %v, want the middleware's", res.Steps[0].Artifact)
	}
	last := render(res.Messages)[len(res.Messages)-1]
	if last != "ai: 42" {
		t.Errorf("last message = %q, want the direct answer as the AI's", last)
	}
	for _, m := range res.Messages {
		for _, p := range m.Parts {
			if strings.Contains(fmtPart(p), "answer\":42") {
				t.Errorf("the artifact reached the transcript: %v", p)
			}
		}
	}
}

func fmtPart(p llms.ContentPart) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// ErrStopRun ends the run with the partial result: the next model call is
// never made, and calls of the batch not yet started never start. The
// stopped turn is recorded whole, each call with what the model will read.
func TestErrStopRun(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []string
	tool := toolstage.NewTool("step", "A step.", func(_ context.Context, a struct {
		N string `json:"n"`
	}) (string, error) {
		mu.Lock()
		ran = append(ran, a.N)
		mu.Unlock()
		return "ok", nil
	})
	stop := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			if strings.Contains(string(call.Args), "halt") {
				return nil, errors.Join(toolstage.ErrStopRun, errors.New("budget exhausted"))
			}
			return next(ctx, call)
		}
	})
	var log eventLog
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("step", `{"n":"1"}`)),
		fakemodel.ToolCalls(fakemodel.Call("step", `{"n":"halt"}`), fakemodel.Call("step", `{"n":"3"}`)),
		fakemodel.Text("never asked"),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(stop), toolstage.WithMaxConcurrency(1), toolstage.WithEventHandler(log.handle)))
	res, err := a.Run(context.Background(), "go")
	if !errors.Is(err, toolstage.ErrStopRun) || !strings.Contains(err.Error(), "budget exhausted") {
		t.Fatalf("Run error = %v, want the middleware's ErrStopRun", err)
	}
	if res == nil || res.ModelCalls != 2 || res.Output != "" {
		t.Fatalf("result = %+v, want the partial result after 2 model calls", res)
	}
	if !slices.Equal(ran, []string{"1"}) {
		t.Errorf("tool ran %v, want only the first turn's call", ran)
	}
	if len(res.Steps) != 3 || !errors.Is(res.Steps[1].Err, toolstage.ErrStopRun) || res.Steps[1].Turn != 2 ||
		!errors.Is(res.Steps[2].Err, toolstage.ErrCallNotStarted) || !errors.Is(res.Steps[2].Err, toolstage.ErrNotRun) {
		t.Errorf("steps = %+v, want the first call, the stopping one and the one that never started", res.Steps)
	}
	got := toolMessages(res.Messages)
	if len(got) != 3 || got[0] != "ok" || !strings.Contains(got[1], "budget exhausted") || !strings.Contains(got[2], "did not run") {
		t.Errorf("tool messages %q, want the first call's result, the stop's error and that the third did not run", got)
	}
	for _, s := range res.Steps {
		if s.Message < 0 || s.Message >= len(res.Messages) {
			t.Errorf("step %s: Message = %d, want its AI message's index", s.CallID, s.Message)
		}
	}
	if _, ok := log.find(guard.EventRunStopped); !ok {
		t.Errorf("events = %v, want run_stopped", log.kinds())
	}
}

func TestCallFrom(t *testing.T) {
	t.Parallel()
	if _, ok := toolstage.CallFrom(context.Background()); ok {
		t.Error("CallFrom(Background) = ok, want false")
	}
	var got toolstage.CallInfo
	var transcript []llms.MessageContent
	var inMiddleware bool
	tool := toolstage.NewTool("whoami", "Who.", func(ctx context.Context, _ struct{}) (string, error) {
		got, _ = toolstage.CallFrom(ctx)
		transcript, _ = agent.TranscriptFrom(ctx)
		return "you", nil
	})
	mw := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			info, ok := toolstage.CallFrom(ctx)
			inMiddleware = ok && info.ID == call.ID
			return next(ctx, call)
		}
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("whoami", `{}`)), fakemodel.Text("done"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(mw)), agent.WithSystemPrompt("sys"))
	ctx := guard.WithThread(context.Background(), "thread-7")
	if _, err := a.Run(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	if got.ID != "call_1" || got.Tool != "whoami" || got.Thread != "thread-7" || got.Attempt != 1 || len(transcript) != 2 {
		t.Errorf("CallFrom = %+v, TranscriptFrom = %d messages, want call_1 whoami thread-7 attempt 1 with the 2 messages before the turn", got, len(transcript))
	}
	if !inMiddleware {
		t.Error("CallFrom inside a tool middleware did not name the call")
	}
}

// Steps and Messages tell each turn's batch apart.
func TestStepsTellBatchesApart(t *testing.T) {
	t.Parallel()
	tool := toolstage.NewTool("get_weather", "Weather.", func(_ context.Context, w WeatherArgs) (string, error) { return w.City, nil })
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city":"A"}`), fakemodel.Call("get_weather", `{"city":"B"}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city":"C"}`)),
		fakemodel.Text("done"),
	)
	res, err := agent.New(model, toolstage.New([]toolstage.Tool{tool})).Run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	var turns, msgs []int
	for _, s := range res.Steps {
		turns, msgs = append(turns, s.Turn), append(msgs, s.Message)
		call := res.Messages[s.Message].Parts[0].(llms.ToolCall)
		if call.ID != s.CallID {
			t.Errorf("Messages[%d] holds %s, want %s", s.Message, call.ID, s.CallID)
		}
	}
	if !slices.Equal(turns, []int{1, 1, 2}) || !slices.Equal(msgs, []int{1, 3, 5}) {
		t.Errorf("turns %v messages %v, want [1 1 2] [1 3 5]", turns, msgs)
	}
}

// Without ToolArgValidation, the tool stage applies the model stage's
// default coercions to the model's arguments ("5" for an integer), but
// never to arguments a tool middleware set.
func TestToolStageCoercesModelArgumentsOnly(t *testing.T) {
	t.Parallel()
	type Args struct {
		Days int `json:"days"`
	}
	for _, tc := range []struct {
		name    string
		rewrite string // "" leaves the model's arguments
		want    []int
	}{
		{"model arguments coerced", "", []int{5}},
		{"replaced arguments not coerced", `{"days":"6"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []int
			tool := toolstage.NewTool("forecast", "Forecast.", func(_ context.Context, a Args) (string, error) {
				got = append(got, a.Days)
				return "ok", nil
			})
			var mws []toolstage.ToolMiddleware
			if tc.rewrite != "" {
				mws = append(mws, toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
					return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
						call.Args = json.RawMessage(tc.rewrite)
						return next(ctx, call)
					}
				}))
			}
			model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("forecast", `{"days":"5"}`)), fakemodel.Text("done"))
			res, err := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(mws...))).Run(context.Background(), "x")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("tool got %v, want %v (step %+v)", got, tc.want, res.Steps[0])
			}
		})
	}
}

// checkStepMessages checks that every step of res recorded in its
// transcript (Step.Message >= 0) points at the AI message holding its call,
// followed by the call's tool message, and that steps of a turn are in
// message order.
func checkStepMessages(t *testing.T, res *agent.Result) {
	t.Helper()
	last := -1
	for i, s := range res.Steps {
		if s.Message < 0 {
			continue
		}
		if s.Message <= last || s.Message+1 >= len(res.Messages) {
			t.Errorf("Steps[%d].Message = %d: out of order or out of range (%d messages)", i, s.Message, len(res.Messages))
			continue
		}
		last = s.Message
		ai, tool := res.Messages[s.Message], res.Messages[s.Message+1]
		var call *llms.ToolCall
		for _, p := range ai.Parts {
			if tc, ok := p.(llms.ToolCall); ok && tc.ID == s.CallID && tc.FunctionCall != nil && tc.FunctionCall.Name == s.Tool {
				call = &tc
			}
		}
		if ai.Role != llms.ChatMessageTypeAI || call == nil {
			t.Errorf("Steps[%d] (%s %s): message %d is not the AI message of its call: %+v", i, s.CallID, s.Tool, s.Message, ai)
			continue
		}
		if call.FunctionCall.Arguments != s.ModelArguments && call.FunctionCall.Arguments != s.Arguments {
			t.Errorf("Steps[%d]: the transcript's arguments %s are neither the model's %s nor those that ran %s", i, call.FunctionCall.Arguments, s.ModelArguments, s.Arguments)
		}
		resp, ok := tool.Parts[0].(llms.ToolCallResponse)
		if tool.Role != llms.ChatMessageTypeTool || !ok || resp.ToolCallID != s.CallID {
			t.Errorf("Steps[%d]: message %d is not its tool message: %+v", i, s.Message+1, tool)
		}
	}
}

// A tool middleware may run attempts of one call at once (a hedge): the
// tool stage's record of the call is safe for that (this test fails under
// -race without it).
func TestToolStageConcurrentAttemptsOfOneCall(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	tool := toolstage.NewSchemaTool("get_rate", "Rate.", nil, func(context.Context, map[string]any) (string, error) {
		runs.Add(1)
		return "1.1", nil
	})
	hedge := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			type out struct {
				res *toolstage.ToolResult
				err error
			}
			outs := make(chan out, 2)
			for range 2 {
				c := *call
				go func() {
					res, err := next(ctx, &c)
					outs <- out{res, err}
				}()
			}
			o := <-outs
			<-outs
			return o.res, o.err
		}
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_rate", `{}`)), fakemodel.Text("ok"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(hedge)))
	res, err := a.Run(context.Background(), "rate?")
	if err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 2 || res.Steps[0].Result != "1.1" || res.Steps[0].Arguments != `{}` {
		t.Errorf("ran %d times, Steps[0] = %+v; want 2 runs and the result", n, res.Steps[0])
	}
}

// The attack: a policy middleware denies transfers over 1000; the model
// sends the amount as a string, which the policy does not read as a
// number, and the default coercions turn into one for the tool. A tool
// middleware must see the arguments the tool would get.
func TestToolMiddlewareSeesCoercedArguments(t *testing.T) {
	t.Parallel()
	type Transfer struct {
		To     string  `json:"to"`
		Amount float64 `json:"amount"`
	}
	var ran atomic.Int32
	tool := toolstage.NewTool("transfer_money", "Send money.", func(context.Context, Transfer) (string, error) {
		ran.Add(1)
		return "sent", nil
	})
	errDenied := errors.New("denied: over 1000")
	policy := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			var a Transfer
			_ = json.Unmarshal(call.Args, &a)
			if a.Amount > 1000 {
				return nil, errDenied
			}
			return next(ctx, call)
		}
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("transfer_money", `{"to":"mallory","amount":"5000"}`)), fakemodel.Text("ok"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.WithToolMiddleware(policy)))
	res, err := a.Run(context.Background(), "pay")
	if err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 0 || !errors.Is(res.Steps[0].Err, errDenied) {
		t.Errorf("the tool ran %d times, Step.Err = %v; want the policy's denial", n, res.Steps[0].Err)
	}
}

// A sub-agent run from a tool is a run of its own: an agent without an
// event handler reports nothing to its caller's (the default reports
// nothing), even inside another agent's run.
func TestEventHandlerNotInheritedBySubAgent(t *testing.T) {
	t.Parallel()
	inner := toolstage.NewSchemaTool("inner_tool", "Denied.", nil, func(context.Context, map[string]any) (string, error) { return "x", nil })
	deny := toolstage.ToolFunc(func(toolstage.ToolHandler) toolstage.ToolHandler {
		return func(context.Context, *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			return nil, errors.New("denied")
		}
	})
	sub := agent.New(fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("inner_tool", `{}`)), fakemodel.Text("sub done")), toolstage.New([]toolstage.Tool{inner}, toolstage.WithToolMiddleware(deny)))
	delegate := toolstage.NewSchemaTool("delegate", "Sub-agent.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
		res, err := sub.Run(ctx, "go")
		if err != nil {
			return "", err
		}
		return res.Output, nil
	})
	var log eventLog
	a := agent.New(fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("delegate", `{}`)), fakemodel.Text("done")), toolstage.New([]toolstage.Tool{delegate}, toolstage.WithEventHandler(log.handle)))
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if e, ok := log.find(guard.EventToolDenied); ok {
		t.Errorf("the parent's handler got the sub-agent's event %+v", e)
	}
}
