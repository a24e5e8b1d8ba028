package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// WeatherArgs are the arguments of the get_weather tool used in the tests.
type WeatherArgs struct {
	City  string `json:"city" jsonschema:"the city"`
	Units string `json:"units,omitempty"`
}

// render writes a transcript one message per line, so that tests can compare
// it exactly: "ai: call_1 get_weather({...}) | text", "tool: call_1
// get_weather -> result".
func render(msgs []llms.MessageContent) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		parts := make([]string, len(m.Parts))
		for j, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				parts[j] = p.Text
			case llms.ToolCall:
				parts[j] = fmt.Sprintf("%s %s(%s)", p.ID, p.FunctionCall.Name, p.FunctionCall.Arguments)
			case llms.ToolCallResponse:
				parts[j] = fmt.Sprintf("%s %s -> %s", p.ToolCallID, p.Name, p.Content)
			default:
				parts[j] = fmt.Sprintf("%T", p)
			}
		}
		out[i] = string(m.Role) + ": " + strings.Join(parts, " | ")
	}
	return out
}

func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\ngot\n\t%s\nwant\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// recorder is a tool function that records the arguments it was called with.
type recorder[T any] struct {
	mu    sync.Mutex
	calls []T
}

func (r *recorder[T]) fn(result string) func(context.Context, T) (string, error) {
	return func(_ context.Context, args T) (string, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, args)
		return result, nil
	}
}

func (r *recorder[T]) got() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// A typed tool's bad first call is caught by ToolArgValidation inside the
// model call; the tool runs once, with the corrected arguments, and the
// transcript holds only the call that ran.
func TestTypedToolCorrectedByValidation(t *testing.T) {
	t.Parallel()
	var rec recorder[WeatherArgs]
	weather := toolstage.NewTool("get_weather", "Current weather in a city.", rec.fn(`{"sky": "sunny"}`))
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 75001, "units": null}`)),
		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
		fakemodel.Text("It is sunny in Paris."),
	)
	a := agent.New(model, toolstage.New([]toolstage.Tool{weather}), agent.WithSystemPrompt("You answer weather questions."), agent.WithMiddleware(middleware.ToolArgValidation()))

	res, err := a.Run(context.Background(), "Weather in Paris?")
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if res.Output != "It is sunny in Paris." {
		t.Errorf("Output = %q, want %q", res.Output, "It is sunny in Paris.")
	}
	diffLines(t, "Messages", render(res.Messages), []string{
		"system: You answer weather questions.",
		"human: Weather in Paris?",
		`ai: call_2 get_weather({"city": "Paris"})`,
		`tool: call_2 get_weather -> {"sky": "sunny"}`,
		"ai: It is sunny in Paris.",
	})
	if got, want := rec.got(), []WeatherArgs{{City: "Paris"}}; !slices.Equal(got, want) {
		t.Errorf("tool ran with %+v, want %+v", got, want)
	}
	wantSteps := []agent.Step{{CallID: "call_2", Tool: "get_weather", Arguments: `{"city": "Paris"}`, ModelArguments: `{"city": "Paris"}`, Result: `{"sky": "sunny"}`, Turn: 1, Message: 2}}
	if !slices.Equal(res.Steps, wantSteps) {
		t.Errorf("Steps = %+v, want %+v", res.Steps, wantSteps)
	}
	if res.ModelCalls != 3 || len(model.Requests()) != 3 {
		t.Errorf("ModelCalls = %d (model saw %d), want 3: the re-ask counts", res.ModelCalls, len(model.Requests()))
	}
	// The re-ask, inside the middleware, told the model what was wrong.
	reask := render(model.Requests()[1].Messages)
	if last := reask[len(reask)-1]; !strings.Contains(last, "- /city: expected string, got 75001") {
		t.Errorf("re-ask ends with %q, want the /city violation", last)
	}
}

// The model is sent every tool's real JSON Schema, as a map (the form every
// provider accepts), and the very same values on every call so that
// ToolArgValidation compiles each once.
func TestModelReceivesToolSchemas(t *testing.T) {
	t.Parallel()
	mapSchema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"query": map[string]any{"type": "string"}},
		"required":   []any{"query"},
	}
	rawSchema := json.RawMessage(`{"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}}}`)
	noop := func(context.Context, map[string]any) (string, error) { return "ok", nil }
	tools := []toolstage.Tool{
		toolstage.NewTool("get_weather", "Current weather in a city.", func(context.Context, WeatherArgs) (string, error) { return "", nil }),
		toolstage.NewSchemaTool("search", "Searches the web.", mapSchema, noop),
		toolstage.NewSchemaTool("lookup", "Looks a record up.", rawSchema, noop),
		toolstage.NewSchemaTool("now", "The current time.", nil, noop),
	}
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("now", `{}`)),
		fakemodel.Text("done"),
	)
	if _, err := agent.New(model, toolstage.New(tools)).Run(context.Background(), "go"); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	want := []struct{ name, description, schema string }{
		{"get_weather", "Current weather in a city.", validation.Typed[WeatherArgs]().String()},
		{"search", "Searches the web.", `{"properties":{"query":{"type":"string"}},"required":["query"],"type":"object"}`},
		{"lookup", "Looks a record up.", `{"properties":{"id":{"minimum":1,"type":"integer"}},"type":"object"}`},
		{"now", "The current time.", `{"properties":{},"type":"object"}`},
	}
	reqs := model.Requests()
	for r, req := range reqs {
		got := req.Options.Tools
		if len(got) != len(want) {
			t.Fatalf("request %d offers %d tools, want %d", r, len(got), len(want))
		}
		for i, w := range want {
			fn := got[i].Function
			if got[i].Type != "function" || fn.Name != w.name || fn.Description != w.description {
				t.Errorf("request %d tool %d = %q %q %q, want function %q %q", r, i, got[i].Type, fn.Name, fn.Description, w.name, w.description)
			}
			m, ok := fn.Parameters.(map[string]any)
			if !ok {
				t.Errorf("tool %q Parameters is %T, want map[string]any", w.name, fn.Parameters)
				continue
			}
			if got := canonical(t, m); got != canonical(t, json.RawMessage(w.schema)) {
				t.Errorf("tool %q Parameters = %s, want %s", w.name, got, w.schema)
			}
			first := reqs[0].Options.Tools[i].Function.Parameters
			if reflect.ValueOf(first).UnsafePointer() != reflect.ValueOf(m).UnsafePointer() {
				t.Errorf("tool %q: request %d sent a new Parameters map, want the one built by New", w.name, r)
			}
		}
	}
	if p := reqs[0].Options.Tools[1].Function.Parameters; reflect.ValueOf(p).UnsafePointer() != reflect.ValueOf(mapSchema).UnsafePointer() {
		t.Errorf("a map schema was copied; want it sent as given")
	}
}

// canonical returns v as JSON with sorted keys.
func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

// The typed schema sent as a map keeps its Validate hook inside
// ToolArgValidation.
type Booking struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func (b Booking) Validate() error {
	if b.To < b.From {
		return validation.FieldError("/to", "must not be before from")
	}
	return nil
}

func TestValidateHookReachesToolArgValidation(t *testing.T) {
	t.Parallel()
	var rec recorder[Booking]
	book := toolstage.NewTool("book", "Books a room.", rec.fn("booked"))
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("book", `{"from": "2025-05-02", "to": "2025-05-01"}`)),
		fakemodel.ToolCalls(fakemodel.Call("book", `{"from": "2025-05-01", "to": "2025-05-02"}`)),
		fakemodel.Text("Booked."),
	)
	res, err := agent.New(model, toolstage.New([]toolstage.Tool{book}), agent.WithMiddleware(middleware.ToolArgValidation())).Run(context.Background(), "book")
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got, want := rec.got(), []Booking{{From: "2025-05-01", To: "2025-05-02"}}; !slices.Equal(got, want) {
		t.Errorf("tool ran with %+v, want %+v", got, want)
	}
	reask := render(model.Requests()[1].Messages)
	if last := reask[len(reask)-1]; !strings.Contains(last, "- /to: must not be before from") {
		t.Errorf("re-ask ends with %q, want the Validate violation", last)
	}
	if res.ModelCalls != 3 {
		t.Errorf("ModelCalls = %d, want 3", res.ModelCalls)
	}
}

// Three calls of one response run in parallel and finish in reverse order;
// the transcript lists them in call order, each AI message followed by the
// tool message with the same id, the response's text on the first.
func TestParallelCallsKeepCallOrder(t *testing.T) {
	t.Parallel()
	type arg struct {
		N int `json:"n"`
	}
	// Call n waits for call n+1 to finish: only a parallel run completes,
	// and it completes 3, 2, 1.
	finishedCh := map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{}), 3: make(chan struct{}), 4: nil}
	var mu sync.Mutex
	var order []int
	slow := toolstage.NewTool("slow", "Waits for the next call.", func(ctx context.Context, a arg) (string, error) {
		if next := finishedCh[a.N+1]; next != nil {
			select {
			case <-next:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		mu.Lock()
		order = append(order, a.N)
		mu.Unlock()
		close(finishedCh[a.N])
		return fmt.Sprintf("result %d", a.N), nil
	})
	model := fakemodel.New(
		fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{
			Content: "Running three.",
			ToolCalls: []llms.ToolCall{
				{ID: "call_a", Type: "function", FunctionCall: &llms.FunctionCall{Name: "slow", Arguments: `{"n": 1}`}},
				{ID: "call_b", Type: "function", FunctionCall: &llms.FunctionCall{Name: "slow", Arguments: `{"n": 2}`}},
				{ID: "call_c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "slow", Arguments: `{"n": 3}`}},
			},
		}}}),
		fakemodel.Text("All done."),
	)
	res, err := agent.New(model, toolstage.New([]toolstage.Tool{slow}, toolstage.WithMaxConcurrency(3))).Run(context.Background(), "run three")
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if want := []int{3, 2, 1}; !slices.Equal(order, want) {
		t.Errorf("calls finished in order %v, want %v", order, want)
	}
	transcript := []string{
		"human: run three",
		`ai: call_a slow({"n": 1}) | Running three.`,
		"tool: call_a slow -> result 1",
		`ai: call_b slow({"n": 2})`,
		"tool: call_b slow -> result 2",
		`ai: call_c slow({"n": 3})`,
		"tool: call_c slow -> result 3",
	}
	diffLines(t, "Messages", render(res.Messages), append(slices.Clone(transcript), "ai: All done."))
	diffLines(t, "what the model was sent", render(model.Requests()[1].Messages), transcript)
	for i, s := range res.Steps {
		if want := fmt.Sprintf("result %d", i+1); s.Result != want || s.CallID != "call_"+string(rune('a'+i)) {
			t.Errorf("Steps[%d] = %+v, want result %q for call_%c", i, s, want, 'a'+i)
		}
	}
}

// No more than WithMaxConcurrency tool calls run at once.
func TestMaxConcurrency(t *testing.T) {
	t.Parallel()
	const calls, limit = 5, 2
	started := make(chan struct{})
	release := make(chan struct{})
	var inflight, peak atomic.Int32
	block := toolstage.NewSchemaTool("block", "Blocks until released.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		started <- struct{}{}
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	batch := make([]llms.ToolCall, calls)
	for i := range batch {
		batch[i] = fakemodel.Call("block", `{}`)
	}
	model := fakemodel.New(fakemodel.ToolCalls(batch...), fakemodel.Text("done"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{block}, toolstage.WithMaxConcurrency(limit)))

	type outcome struct {
		res *agent.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := a.Run(context.Background(), "go")
		done <- outcome{res, err}
	}()
	for range limit {
		<-started
	}
	for range calls - limit { // each release lets exactly one more call start
		release <- struct{}{}
		<-started
	}
	for range limit {
		release <- struct{}{}
	}
	out := <-done
	if out.err != nil {
		t.Fatalf("Run = %v, want nil", out.err)
	}
	if len(out.res.Steps) != calls {
		t.Errorf("len(Steps) = %d, want %d", len(out.res.Steps), calls)
	}
	if p := peak.Load(); p != limit {
		t.Errorf("at most %d calls ran at once, want %d (WithMaxConcurrency)", p, limit)
	}
}

var errDiskFull = errors.New("disk full")

// A tool's error and a call of a tool that does not exist become tool
// messages the model reads; the run goes on.
func TestToolErrorAndUnknownToolReachModel(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, map[string]any) (string, error) { return "ok", nil }
	tools := []toolstage.Tool{
		toolstage.NewSchemaTool("save", "Saves.", nil, func(context.Context, map[string]any) (string, error) { return "partial", errDiskFull }),
		toolstage.NewSchemaTool("ok", "Succeeds.", nil, noop),
		toolstage.NewTool("get_weather", "Weather.", func(context.Context, WeatherArgs) (string, error) { return "sunny", nil }),
	}
	model := fakemodel.New(
		fakemodel.ToolCalls(
			fakemodel.Call("save", `{}`),
			fakemodel.Call("nope", `{"x": 1}`),
			fakemodel.Call("get_weather", `{"city": 42}`), // no ToolArgValidation: the tool checks
		),
		fakemodel.Text("Saving failed."),
	)
	res, err := agent.New(model, toolstage.New(tools)).Run(context.Background(), "save it")
	if err != nil {
		t.Fatalf("Run = %v, want nil: tool errors do not end a run", err)
	}
	if res.Output != "Saving failed." {
		t.Errorf("Output = %q, want %q", res.Output, "Saving failed.")
	}
	diffLines(t, "what the model was sent", render(model.Requests()[1].Messages), []string{
		"human: save it",
		"ai: call_1 save({})",
		"tool: call_1 save -> Error: disk full",
		`ai: call_2 nope({"x": 1})`,
		`tool: call_2 nope -> Tool "nope" does not exist. Available tools: "get_weather", "ok", "save". Did you mean "ok"? Call one of the available tools by its exact name.`,
		`ai: call_3 get_weather({"city": 42})`,
		"tool: call_3 get_weather -> Invalid arguments for tool \"get_weather\": 1 error.\n" +
			"- /city: expected string, got 42\n" +
			"Call get_weather again with corrected arguments.",
	})
	if len(res.Steps) != 3 {
		t.Fatalf("len(Steps) = %d, want 3", len(res.Steps))
	}
	if s := res.Steps[0]; !errors.Is(s.Err, errDiskFull) || s.Result != "" {
		t.Errorf("Steps[0] = %+v, want Err disk full and no Result", s)
	}
	if s := res.Steps[1]; !errors.Is(s.Err, toolstage.ErrUnknownTool) || s.Tool != "nope" || s.Arguments != `{"x": 1}` {
		t.Errorf("Steps[1] = %+v, want ErrUnknownTool for nope", s)
	}
	var ve *validation.Error
	if s := res.Steps[2]; !errors.As(s.Err, &ve) || ve.Tool != "get_weather" {
		t.Errorf("Steps[2].Err = %v, want a *validation.Error for get_weather", s.Err)
	}
}

// A long tool error is cut short in the tool message.
func TestToolErrorIsBounded(t *testing.T) {
	t.Parallel()
	long := errors.New(strings.Repeat("é", 3000))
	fail := toolstage.NewSchemaTool("fail", "Fails.", nil, func(context.Context, map[string]any) (string, error) { return "", long })
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("fail", `{}`)), fakemodel.Text("ok"))
	if _, err := agent.New(model, toolstage.New([]toolstage.Tool{fail})).Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	msg := model.Requests()[1].Messages[2].Parts[0].(llms.ToolCallResponse).Content
	if !strings.HasPrefix(msg, "Error: éé") || !strings.HasSuffix(msg, safetext.Ellipsis) || len(msg) > 2100 {
		t.Errorf("tool message of a %d-byte error: %d bytes, %q...%q; want it cut to about 2 KiB", len(long.Error()), len(msg), msg[:12], msg[len(msg)-8:])
	}
}

// A model that never stops calling tools ends the run with ErrMaxIterations
// and the partial result.
func TestMaxIterations(t *testing.T) {
	t.Parallel()
	var rec recorder[map[string]any]
	ping := toolstage.NewSchemaTool("ping", "Pings.", nil, func(ctx context.Context, args map[string]any) (string, error) {
		return rec.fn("pong")(ctx, args)
	})
	model := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("ping", `{}`)),
		fakemodel.ToolCalls(fakemodel.Call("ping", `{}`)),
		fakemodel.Text("never reached"),
	)
	res, err := agent.New(model, toolstage.New([]toolstage.Tool{ping}), agent.WithMaxIterations(2)).Run(context.Background(), "loop")
	if !errors.Is(err, agent.ErrMaxIterations) {
		t.Fatalf("Run = %v, want ErrMaxIterations", err)
	}
	if res == nil {
		t.Fatal("Run returned a nil *Result with ErrMaxIterations, want the partial result")
	}
	if res.Output != "" || res.ModelCalls != 2 || len(res.Steps) != 2 || len(rec.got()) != 2 {
		t.Errorf("Result = Output %q, ModelCalls %d, %d Steps, tool ran %d times; want \"\", 2, 2, 2",
			res.Output, res.ModelCalls, len(res.Steps), len(rec.got()))
	}
	diffLines(t, "Messages", render(res.Messages), []string{
		"human: loop",
		"ai: call_1 ping({})",
		"tool: call_1 ping -> pong",
		"ai: call_2 ping({})",
		"tool: call_2 ping -> pong",
	})
	if model.Remaining() != 1 {
		t.Errorf("the model was called %d times, want 2", 3-model.Remaining())
	}
}

// Providers that send no call ids (Gemini) get deterministic ones, the same
// with or without ToolArgValidation, matching between each AI message and
// its tool message.
func TestMissingIDsAreSynthesized(t *testing.T) {
	t.Parallel()
	noIDs := &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
		{Type: "function", FunctionCall: &llms.FunctionCall{Name: "echo", Arguments: `{"s": "a"}`}},
		{Type: "function", FunctionCall: &llms.FunctionCall{Name: "echo", Arguments: `{"s": "b"}`}},
	}}}}
	// A choice with only the legacy FuncCall (no ToolCalls) is a call too.
	legacy := &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		FuncCall: &llms.FunctionCall{Name: "echo", Arguments: `{"s": "c"}`},
	}}}
	echo := toolstage.NewSchemaTool("echo", "Echoes.", map[string]any{"type": "object"}, func(_ context.Context, args map[string]any) (string, error) {
		return fmt.Sprint(args["s"]), nil
	})
	run := func(mws ...middleware.Middleware) []agent.Step {
		model := fakemodel.New(fakemodel.Response(noIDs), fakemodel.Response(legacy), fakemodel.Text("done"))
		res, err := agent.New(model, toolstage.New([]toolstage.Tool{echo}), agent.WithMiddleware(mws...)).Run(context.Background(), "echo")
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		msgs := res.Messages
		for i, s := range res.Steps {
			call := msgs[1+2*i].Parts[0].(llms.ToolCall)
			answer := msgs[2+2*i].Parts[0].(llms.ToolCallResponse)
			if s.CallID == "" || call.ID != s.CallID || answer.ToolCallID != s.CallID {
				t.Errorf("step %d: ids %q (step), %q (AI message), %q (tool message), want one non-empty id", i, s.CallID, call.ID, answer.ToolCallID)
			}
		}
		return res.Steps
	}
	bare, again, validated := run(), run(), run(middleware.ToolArgValidation())
	if len(bare) != 3 {
		t.Fatalf("len(Steps) = %d, want 3", len(bare))
	}
	ids := []string{bare[0].CallID, bare[1].CallID, bare[2].CallID}
	if ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
		t.Errorf("synthesized ids %v are not distinct", ids)
	}
	for i := range bare {
		if again[i].CallID != bare[i].CallID || validated[i].CallID != bare[i].CallID {
			t.Errorf("step %d id: %q, then %q, with ToolArgValidation %q; want the same deterministic id", i, bare[i].CallID, again[i].CallID, validated[i].CallID)
		}
	}
}

// Anthropic returns one choice per content block: the text and the calls of
// all choices make one turn.
func TestCallsFromEveryChoice(t *testing.T) {
	t.Parallel()
	echo := toolstage.NewSchemaTool("echo", "Echoes.", nil, func(_ context.Context, args map[string]any) (string, error) {
		return fmt.Sprint(args["s"]), nil
	})
	model := fakemodel.New(
		fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{
			{Content: "Let me echo."},
			{ToolCalls: []llms.ToolCall{{ID: "toolu_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "echo", Arguments: `{"s": "x"}`}}}},
			{ToolCalls: []llms.ToolCall{{ID: "toolu_2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "echo", Arguments: `{"s": "y"}`}}}},
		}}),
		fakemodel.Text("x y"),
	)
	res, err := agent.New(model, toolstage.New([]toolstage.Tool{echo})).Run(context.Background(), "echo")
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	diffLines(t, "Messages", render(res.Messages), []string{
		"human: echo",
		`ai: toolu_1 echo({"s": "x"}) | Let me echo.`,
		"tool: toolu_1 echo -> x",
		`ai: toolu_2 echo({"s": "y"})`,
		"tool: toolu_2 echo -> y",
		"ai: x y",
	})
}

// A tool call without a function cannot be run or shown as a call: the model
// is told in a human message.
func TestCallWithoutFunction(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(
		fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{
			Content: "Hmm.", ToolCalls: []llms.ToolCall{{ID: "broken", Type: "function"}},
		}}}),
		fakemodel.Text("Sorry."),
	)
	res, err := agent.New(model, toolstage.New(nil)).Run(context.Background(), "go")
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	diffLines(t, "Messages", render(res.Messages), []string{
		"human: go",
		"ai: Hmm.",
		"human: Your previous response contained 1 tool call(s) without a function name; they were not executed. Call the tools again, each with its name and a JSON object of arguments.",
		"ai: Sorry.",
	})
	if len(res.Steps) != 1 || res.Steps[0].CallID != "broken" || res.Steps[0].Err == nil {
		t.Errorf("Steps = %+v, want one failed step for call broken", res.Steps)
	}
}

var errOverloaded = errors.New("overloaded")

// A failing model call ends the run with an error wrapping the model's, and
// the transcript so far.
func TestModelError(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Fail(errOverloaded))
	res, err := agent.New(model, toolstage.New(nil), agent.WithSystemPrompt("sys")).Run(context.Background(), "hi")
	if !errors.Is(err, errOverloaded) || !strings.HasPrefix(err.Error(), "agent: ") {
		t.Fatalf("Run = %v, want an agent: error wrapping %v", err, errOverloaded)
	}
	diffLines(t, "Messages", render(res.Messages), []string{"system: sys", "human: hi"})
	if res.ModelCalls != 1 {
		t.Errorf("ModelCalls = %d, want 1: a failed call reached the model", res.ModelCalls)
	}
}

// Cancelling the context stops a run promptly with context.Canceled, during
// a tool call or a model call, and tool calls not yet started never start.
func TestCancel(t *testing.T) {
	t.Parallel()
	t.Run("tool honours ctx", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		started := make(chan struct{})
		var runs atomic.Int32
		wait := toolstage.NewSchemaTool("wait", "Waits for ctx.", nil, func(ctx context.Context, _ map[string]any) (string, error) {
			if runs.Add(1) == 1 {
				close(started)
			}
			<-ctx.Done()
			return "", ctx.Err()
		})
		model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("wait", `{}`), fakemodel.Call("wait", `{}`)), fakemodel.Text("unreached"))
		a := agent.New(model, toolstage.New([]toolstage.Tool{wait}, toolstage.WithMaxConcurrency(1)))
		go func() { <-started; cancel() }()
		res, err := a.Run(ctx, "wait")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("the tool ran %d times, want 1: the second call must not start after cancel", n)
		}
		diffLines(t, "Messages", render(res.Messages), []string{"human: wait"})
		if res.ModelCalls != 1 {
			t.Errorf("ModelCalls = %d, want 1", res.ModelCalls)
		}
	})
	t.Run("tool ignores ctx", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		started, unblock := make(chan struct{}), make(chan struct{})
		t.Cleanup(func() { close(unblock) }) // let the stuck tool go before goleak looks
		stuck := toolstage.NewSchemaTool("stuck", "Ignores ctx.", nil, func(context.Context, map[string]any) (string, error) {
			close(started)
			<-unblock
			return "late", nil
		})
		model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("stuck", `{}`)), fakemodel.Text("unreached"))
		go func() { <-started; cancel() }()
		res, err := agent.New(model, toolstage.New([]toolstage.Tool{stuck})).Run(ctx, "wait")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled without waiting for the tool", err)
		}
		if len(res.Steps) != 0 {
			t.Errorf("Steps = %+v, want none: the call did not finish", res.Steps)
		}
	})
	t.Run("model call", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		model := fakemodel.New(fakemodel.Func(func(ctx context.Context, _ []llms.MessageContent, _ llms.CallOptions) (*llms.ContentResponse, error) {
			cancel()
			<-ctx.Done()
			return nil, fmt.Errorf("provider: %w", ctx.Err())
		}))
		_, err := agent.New(model, toolstage.New(nil)).Run(ctx, "hi")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		model := fakemodel.New(fakemodel.Text("unreached"))
		res, err := agent.New(model, toolstage.New(nil)).Run(ctx, "hi")
		if !errors.Is(err, context.Canceled) || res.ModelCalls != 0 || model.Remaining() != 1 {
			t.Fatalf("Run = %v with %d model calls, want context.Canceled before any call", err, res.ModelCalls)
		}
	})
}

// echoModel answers a human message with a call of echo and a tool message
// with its content as text, so that concurrent runs on one agent each get
// their own conversation.
type echoModel struct{}

func (echoModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	last := msgs[len(msgs)-1]
	switch p := last.Parts[0].(type) {
	case llms.TextContent:
		args, _ := json.Marshal(map[string]string{"s": p.Text})
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
			{ID: "call_" + p.Text, Type: "function", FunctionCall: &llms.FunctionCall{Name: "echo", Arguments: string(args)}},
		}}}}, nil
	case llms.ToolCallResponse:
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: p.Content}}}, nil
	}
	return nil, errors.New("echoModel: unexpected message")
}

func (m echoModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// One Agent serves concurrent runs, each with its own transcript and count.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	echo := toolstage.NewSchemaTool("echo", "Echoes.", nil, func(_ context.Context, args map[string]any) (string, error) {
		return "echo " + fmt.Sprint(args["s"]), nil
	})
	a := agent.New(echoModel{}, toolstage.New([]toolstage.Tool{echo}), agent.WithMiddleware(middleware.ToolArgValidation()))
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			input := fmt.Sprint(i)
			res, err := a.Run(context.Background(), input)
			if err != nil || res.Output != "echo "+input || res.ModelCalls != 2 || len(res.Messages) != 4 {
				t.Errorf("Run(%q) = %q, %d model calls, %d messages, %v; want %q, 2, 4, nil",
					input, res.Output, res.ModelCalls, len(res.Messages), err, "echo "+input)
			}
		})
	}
	wg.Wait()
}

// A panicking tool neither crashes the process nor makes Run panic: the
// run ends with a *ToolPanicError naming the tool, carrying the value and
// the stack.
func TestToolPanicEndsRun(t *testing.T) {
	t.Parallel()
	boom := toolstage.NewSchemaTool("boom", "Panics.", nil, func(context.Context, map[string]any) (string, error) { panic("kaboom") })
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("boom", `{}`)))
	res, err := agent.New(model, toolstage.New([]toolstage.Tool{boom})).Run(context.Background(), "go")
	var perr *toolstage.ToolPanicError
	if !errors.As(err, &perr) || perr.Tool != "boom" || perr.CallID != "call_1" || perr.Value != "kaboom" || !strings.Contains(string(perr.Stack), "goroutine") {
		t.Fatalf("Run error = %v (%#v), want a *ToolPanicError for boom's call_1 with value kaboom and a stack", err, perr)
	}
	if !strings.Contains(err.Error(), `tool "boom" panicked: kaboom`) {
		t.Errorf("Run error = %q, want it to name the tool and the value", err)
	}
	if len(res.Steps) != 1 || !errors.As(res.Steps[0].Err, &perr) {
		t.Errorf("steps = %+v, want boom's call with the panic", res.Steps)
	}
	if got := toolMessages(res.Messages); len(got) != 1 || !strings.Contains(got[0], "unknown") {
		t.Errorf("tool messages %q, want that boom's outcome is unknown", got)
	}
}

func TestNewPanics(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, map[string]any) (string, error) { return "", nil }
	tool := toolstage.NewSchemaTool("t", "", nil, noop)
	model := fakemodel.New()
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"nil model", func() { agent.New(nil, toolstage.New(nil)) }, "nil model"},
		{"nil tool", func() { agent.New(model, toolstage.New([]toolstage.Tool{nil})) }, "tool 0 is nil"},
		{"no name", func() { agent.New(model, toolstage.New([]toolstage.Tool{toolstage.NewSchemaTool("", "", nil, noop)})) }, "tool 0 has no name"},
		{"same name", func() { agent.New(model, toolstage.New([]toolstage.Tool{tool, tool})) }, `two tools are named "t"`},
		{"zero iterations", func() { agent.WithMaxIterations(0) }, "WithMaxIterations(0)"},
		{"zero concurrency", func() { toolstage.WithMaxConcurrency(0) }, "WithMaxConcurrency(0)"},
		{"nil typed fn", func() { toolstage.NewTool[WeatherArgs]("w", "", nil) }, `NewTool("w"): nil function`},
		{"nil schema fn", func() { toolstage.NewSchemaTool("s", "", nil, nil) }, `NewSchemaTool("s"): nil function`},
		{"not an object", func() { toolstage.NewTool("n", "", func(context.Context, int) (string, error) { return "", nil }) }, "JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				p := recover()
				if s := fmt.Sprint(p); p == nil || !strings.Contains(s, tc.want) {
					t.Errorf("panic = %v, want one mentioning %q", p, tc.want)
				}
			}()
			tc.f()
		})
	}
}

// An agent without tools sends no tool option (an empty tools list is an
// error on some providers) and returns the model's text.
func TestNoTools(t *testing.T) {
	t.Parallel()
	model := fakemodel.New(fakemodel.Text("Hello."))
	res, err := agent.New(model, toolstage.New(nil)).Run(context.Background(), "hi")
	if err != nil || res.Output != "Hello." {
		t.Fatalf("Run = %q, %v; want Hello., nil", res.Output, err)
	}
	if tools := model.Requests()[0].Options.Tools; tools != nil {
		t.Errorf("the model was offered %v, want no tools option", tools)
	}
}
