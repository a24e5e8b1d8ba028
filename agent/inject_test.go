package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

type userKey struct{}

// injectUser supplies user_id from the run's context.
var injectUser = toolstage.Inject("user_id", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) {
	return ctx.Value(userKey{}), nil
})

func asUser(u string) context.Context {
	return context.WithValue(context.Background(), userKey{}, u)
}

// OrderArgs has an injected user id and a Validate method that reads it.
type OrderArgs struct {
	Item   string `json:"item" jsonschema:"what to order"`
	Qty    int    `json:"qty,omitempty"`
	UserID string `json:"user_id" toolguard:"inject"`
}

// Validate refuses large orders from guests: it needs the injected id.
func (a OrderArgs) Validate() error {
	if a.UserID == "" {
		return errors.New("no user")
	}
	if strings.HasPrefix(a.UserID, "guest-") && a.Qty > 1 {
		return validation.FieldError("/qty", "guests may order one item at a time")
	}
	return nil
}

// sentSchema returns the parameters of tool as the model received them in
// its first request, as JSON.
func sentSchema(t *testing.T, m *fakemodel.Model, tool string) string {
	t.Helper()
	reqs := m.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not called")
	}
	for _, tl := range reqs[0].Options.Tools {
		if tl.Function != nil && tl.Function.Name == tool {
			b, err := json.Marshal(tl.Function.Parameters)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
	t.Fatalf("tool %q was not sent", tool)
	return ""
}

// TestInjectedSchemaSentToModel: the model never sees an injected property,
// neither in properties nor in required, for a typed tool (tag) and a raw
// one (InjectArgs); ToolArgValidation is given the same schema.
func TestInjectedSchemaSentToModel(t *testing.T) {
	t.Parallel()
	typed := toolstage.NewTool("order", "Order an item.", func(context.Context, OrderArgs) (string, error) { return "ok", nil })
	raw := toolstage.InjectArgs(toolstage.NewSchemaTool("refund", "Refund an order.", `{
		"type": "object",
		"properties": {"order_id": {"type": "string"}, "user_id": {"type": "string"}, "tenant": {"type": "string"}},
		"required": ["order_id", "user_id", "tenant"]}`,
		func(context.Context, map[string]any) (string, error) { return "ok", nil }), "user_id", "tenant")
	// A hand-built Go map, with Go types JSON does not have.
	goMap := toolstage.InjectArgs(toolstage.NewSchemaTool("cancel", "Cancel an order.", map[string]any{
		"type":       "object",
		"properties": map[string]map[string]string{"order_id": {"type": "string"}, "user_id": {"type": "string"}},
		"required":   []string{"order_id", "user_id"},
	}, func(context.Context, map[string]any) (string, error) { return "ok", nil }), "user_id")
	m := fakemodel.New(fakemodel.Text("hi"))
	a := build(m, []toolstage.Tool{typed, raw, goMap}, toolstage.Inject("tenant", func(context.Context, *toolstage.ToolCall) (any, error) { return "acme", nil }), injectUser, agent.WithMiddleware(middleware.ToolArgValidation()))
	if _, err := a.Run(asUser("u-1"), "hi"); err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]string{
		"order":  `{"additionalProperties":false,"properties":{"item":{"description":"what to order","type":"string"},"qty":{"type":"integer"}},"required":["item"],"type":"object"}`,
		"refund": `{"properties":{"order_id":{"type":"string"}},"required":["order_id"],"type":"object"}`,
		"cancel": `{"properties":{"order_id":{"type":"string"}},"required":["order_id"],"type":"object"}`,
	} {
		got := sentSchema(t, m, tool)
		t.Logf("schema of %s sent to the model: %s", tool, got)
		if got != want {
			t.Errorf("schema of %s sent to the model = %s, want %s", tool, got, want)
		}
	}
	// The tools' own schemas keep the properties, marked.
	if s := typed.Schema().(*validation.Schema).String(); !strings.Contains(s, `"user_id":{"type":"string","x-toolguard-inject":true}`) {
		t.Errorf("typed schema = %s, want user_id marked %s", s, validation.InjectedKeyword)
	}
}

// TestInjectedValueReachesTool: the tool, its Validate method and
// Step.Arguments see the injected value; the transcript and
// Step.ModelArguments never do; a Validate error at the model's own
// property is fed back to the model.
func TestInjectedValueReachesTool(t *testing.T) {
	t.Parallel()
	var got []string
	var mu sync.Mutex
	tool := toolstage.NewTool("order", "Order an item.", func(_ context.Context, a OrderArgs) (string, error) {
		mu.Lock()
		got = append(got, a.UserID)
		mu.Unlock()
		return fmt.Sprintf("%d %s ordered", a.Qty, a.Item), nil
	})
	for _, stage := range []bool{false, true} {
		t.Run(fmt.Sprintf("model stage %v", stage), func(t *testing.T) {
			got = nil
			m := fakemodel.New(
				fakemodel.ToolCalls(fakemodel.Call("order", `{"item": "tea", "qty": 3}`)),
				fakemodel.ToolCalls(fakemodel.Call("order", `{"item": "tea", "qty": 1}`)),
				fakemodel.Text("Ordered."),
			)
			var opts []any
			if stage {
				opts = append(opts, agent.WithMiddleware(middleware.ToolArgValidation()))
			}
			a := build(m, []toolstage.Tool{tool}, append(opts, injectUser)...)
			res, err := a.Run(asUser("guest-7"), "tea")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, []string{"guest-7"}) {
				t.Errorf("the tool ran with user ids %q, want one run with guest-7 (the first call fails Validate)", got)
			}
			var ve *validation.Error
			if len(res.Steps) != 2 || !errors.As(res.Steps[0].Err, &ve) || ve.Violations[0].Path != "/qty" {
				t.Fatalf("steps = %+v, want the first failing Validate at /qty", res.Steps)
			}
			feedback := toolMessages(res.Messages)[0]
			if !strings.Contains(feedback, "/qty: guests may order one item at a time") || strings.Contains(feedback, "guest-7") {
				t.Errorf("feedback = %q, want the Validate message at /qty, without the user id", feedback)
			}
			last := res.Steps[1]
			if last.ModelArguments != `{"item": "tea", "qty": 1}` || !strings.Contains(last.Arguments, `"user_id":"guest-7"`) {
				t.Errorf("Step.ModelArguments = %s, Arguments = %s; want the model's, and the ones that ran with user_id", last.ModelArguments, last.Arguments)
			}
			if b, _ := json.Marshal(res.Messages); strings.Contains(string(b), "guest-7") || strings.Contains(string(b), "user_id") {
				t.Errorf("the transcript holds the injected argument: %s", b)
			}
		})
	}
}

// TestInjectToolCallID: a tool_call_id property gets the call's real id,
// whatever the model sends, and the synthesized one when it sends none.
func TestInjectToolCallID(t *testing.T) {
	t.Parallel()
	type args struct {
		Note   string `json:"note"`
		CallID string `json:"tool_call_id" toolguard:"inject"`
	}
	var mu sync.Mutex
	var seen []string
	tool := toolstage.NewTool("note", "Take a note.", func(ctx context.Context, a args) (string, error) {
		info, _ := toolstage.CallFrom(ctx)
		mu.Lock()
		seen = append(seen, a.CallID+"="+info.ID)
		mu.Unlock()
		return "noted", nil
	})
	m := fakemodel.New(
		fakemodel.ToolCalls(llms.ToolCall{ID: "call_real", Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "note", Arguments: `{"note": "a", "tool_call_id": "call_forged"}`}}),
		fakemodel.Response(&llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
			{Type: "function", FunctionCall: &llms.FunctionCall{Name: "note", Arguments: `{"note": "b"}`}}}}}}),
		fakemodel.Text("ok"),
	)
	a := agent.New(m, toolstage.New([]toolstage.Tool{tool}, toolstage.Inject("tool_call_id", func(_ context.Context, c *toolstage.ToolCall) (any, error) {
		return c.ID, nil
	})))
	res, err := a.Run(context.Background(), "notes")
	if err != nil {
		t.Fatal(err)
	}
	synth := res.Steps[1].CallID
	if synth == "" || !slices.Equal(seen, []string{"call_real=call_real", synth + "=" + synth}) {
		t.Errorf("tool_call_id=CallFrom id: %q, want call_real and the synthesized %q", seen, synth)
	}
}

// TestInjectFailures: an injector's error or a value of the wrong type
// fails the call without running the tool; the model reads a generic
// message, never the injector's text or the value; Step.Err unwraps to the
// cause.
func TestInjectFailures(t *testing.T) {
	t.Parallel()
	secret := errors.New("user db: row for secret-user-9 locked")
	tests := []struct {
		name string
		fn   func(context.Context, *toolstage.ToolCall) (any, error)
		want func(error) bool
	}{
		{"injector error", func(context.Context, *toolstage.ToolCall) (any, error) { return nil, secret },
			func(err error) bool { return errors.Is(err, secret) }},
		{"wrong type", func(context.Context, *toolstage.ToolCall) (any, error) {
			return map[string]string{"secret-user-9": "x"}, nil
		},
			func(err error) bool { var ve *validation.Error; return errors.As(err, &ve) }},
		{"not JSON", func(context.Context, *toolstage.ToolCall) (any, error) { return func() {}, nil },
			func(err error) bool { return err != nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ran := false
			tool := toolstage.NewTool("order", "Order.", func(context.Context, OrderArgs) (string, error) { ran = true; return "ok", nil })
			m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("order", `{"item": "tea"}`)), fakemodel.Text("sorry"))
			log := &eventLog{}
			a := agent.New(m, toolstage.New([]toolstage.Tool{tool}, toolstage.Inject("user_id", tc.fn), toolstage.WithEventHandler(log.handle)))
			res, err := a.Run(context.Background(), "tea")
			if err != nil {
				t.Fatal(err)
			}
			if ran {
				t.Error("the tool ran")
			}
			var ie *toolstage.InjectError
			if !errors.As(res.Steps[0].Err, &ie) || ie.Tool != "order" || !tc.want(ie.Err) {
				t.Fatalf("Step.Err = %#v, want an *InjectError with the cause", res.Steps[0].Err)
			}
			msg := toolMessages(res.Messages)[0]
			if !strings.Contains(msg, "could not be run") || strings.Contains(msg, "secret") || strings.Contains(msg, "user_id") {
				t.Errorf("the model read %q, want a generic failure", msg)
			}
			e, ok := log.find(guard.EventArgsRejected)
			if !ok || strings.Contains(e.Err.Error(), "secret") {
				t.Errorf("events %v: want args_rejected without the cause's text", log.kinds())
			}
		})
	}
}

// TestInjectMisconfiguration: a declared injected argument without Inject
// makes New panic; so do Inject twice and bad InjectArgs; a tag below the
// top level makes Typed panic.
func TestInjectMisconfiguration(t *testing.T) {
	t.Parallel()
	tool := toolstage.NewTool("order", "Order.", func(context.Context, OrderArgs) (string, error) { return "", nil })
	raw := toolstage.NewSchemaTool("r", "R.", `{"type": "object", "properties": {"a": {"type": "string"}}}`,
		func(context.Context, map[string]any) (string, error) { return "", nil })
	type nested struct {
		Inner struct {
			ID string `json:"id" toolguard:"inject"`
		} `json:"inner"`
	}
	type typo struct {
		ID string `json:"id" toolguard:"injected"`
	}
	tests := []struct {
		name, want string
		fn         func()
	}{
		{"no Inject", `tool "order" has the injected argument "user_id", which no Inject supplies`,
			func() { agent.New(fakemodel.New(), toolstage.New([]toolstage.Tool{tool})) }},
		{"no Inject, raw", `tool "r" has the injected argument "a"`,
			func() { agent.New(fakemodel.New(), toolstage.New([]toolstage.Tool{toolstage.InjectArgs(raw, "a")})) }},
		{"Inject twice", `Inject("user_id") is given twice`,
			func() { build(fakemodel.New(), []toolstage.Tool{tool}, injectUser, injectUser) }},
		{"Inject nil", `Inject("x"`, func() { toolstage.Inject("x", nil) }},
		{"InjectArgs no names", "at least one property name", func() { toolstage.InjectArgs(raw) }},
		{"InjectArgs repeated", "empty or repeated", func() { toolstage.InjectArgs(raw, "a", "a") }},
		{"InjectArgs boolean schema", "not a JSON object schema", func() {
			toolstage.InjectArgs(toolstage.NewSchemaTool("b", "B.", json.RawMessage(`true`), func(context.Context, map[string]any) (string, error) { return "", nil }), "a")
		}},
		{"nested tag", "only top-level arguments can be injected", func() { validation.Typed[nested]() }},
		{"unknown tag", `unknown tag toolguard:"injected"`, func() { validation.Typed[typo]() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if p := fmt.Sprint(recover()); !strings.Contains(p, tc.want) {
					t.Errorf("panic = %q, want it to contain %q", p, tc.want)
				}
			}()
			tc.fn()
		})
	}
}

// TestInjectConcurrentRunsNeverCross: many runs of one agent, each as its
// own user and each with a model forging another user's id, run at once:
// every tool call gets its own run's user.
func TestInjectConcurrentRunsNeverCross(t *testing.T) {
	t.Parallel()
	const runs = 64
	var crossed []string
	var mu sync.Mutex
	tool := toolstage.NewTool("order", "Order.", func(ctx context.Context, a OrderArgs) (string, error) {
		if want := ctx.Value(userKey{}).(string); a.UserID != want {
			mu.Lock()
			crossed = append(crossed, a.UserID+" in the run of "+want)
			mu.Unlock()
		}
		return "ok " + a.UserID, nil
	})
	// Each step answers whichever run calls it: a tool call forging
	// another user's id (two per turn, so calls of a batch run in
	// parallel too), or the final text once the tool answered.
	step := fakemodel.Func(func(_ context.Context, msgs []llms.MessageContent, _ llms.CallOptions) (*llms.ContentResponse, error) {
		if msgs[len(msgs)-1].Role == llms.ChatMessageTypeTool {
			return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "done"}}}, nil
		}
		forge := fakemodel.Call("order", `{"item": "tea", "user_id": "u-0"}`)
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{forge, forge}}}}, nil
	})
	steps := make([]fakemodel.Step, 2*runs)
	for i := range steps {
		steps[i] = step
	}
	a := build(fakemodel.New(steps...), []toolstage.Tool{tool}, injectUser, agent.WithMiddleware(middleware.ToolArgValidation()))
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user := fmt.Sprintf("u-%d", i+1)
			res, err := a.Run(asUser(user), "tea")
			if err == nil && (len(res.Steps) != 2 || res.Steps[0].Result != "ok "+user || res.Steps[1].Result != "ok "+user) {
				err = fmt.Errorf("run of %s: steps %+v", user, res.Steps)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if len(crossed) > 0 {
		t.Errorf("%d calls ran as another user: %q", len(crossed), crossed[:min(5, len(crossed))])
	}
}

// wrapped is a user's tool wrapper that forwards everything, as many do.
type wrapped struct{ toolstage.Tool }

// TestInjectThroughWrapper: injected properties are marked in the schema,
// so a wrapper that forwards Schema cannot hide them (LangChain lost them
// under subclasses and custom schemas): the model is not sent user_id and
// the tool gets the injected value.
func TestInjectThroughWrapper(t *testing.T) {
	t.Parallel()
	var got string
	typed := toolstage.NewTool("order", "Order.", func(_ context.Context, a OrderArgs) (string, error) { got = a.UserID; return "ok", nil })
	raw := toolstage.InjectArgs(toolstage.NewSchemaTool("refund", "Refund.", `{"type": "object", "properties": {"user_id": {"type": "string"}}}`,
		func(_ context.Context, a map[string]any) (string, error) {
			got, _ = a["user_id"].(string)
			return "ok", nil
		}), "user_id")
	for _, tool := range []toolstage.Tool{wrapped{typed}, wrapped{raw}} {
		m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call(tool.Name(), `{"item": "tea", "user_id": "admin"}`)), fakemodel.Text("ok"))
		a := build(m, []toolstage.Tool{tool}, injectUser)
		got = ""
		if _, err := a.Run(asUser("u-5"), "go"); err != nil {
			t.Fatal(err)
		}
		if s := sentSchema(t, m, tool.Name()); strings.Contains(s, "user_id") || got != "u-5" {
			t.Errorf("%s behind a wrapper: sent %s, tool got %q; want no user_id sent, u-5 received", tool.Name(), s, got)
		}
	}
}

// TestForgedReportedWhenNotRun: a forged injected argument is reported even
// when its call never starts because the run stopped mid-batch.
func TestForgedReportedWhenNotRun(t *testing.T) {
	t.Parallel()
	for _, stage := range []bool{false, true} {
		t.Run(fmt.Sprintf("model stage %v", stage), func(t *testing.T) {
			t.Parallel()
			tool := toolstage.NewTool("order", "Order.", func(context.Context, OrderArgs) (string, error) { return "ok", nil })
			stop := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
				return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
					return nil, toolstage.ErrStopRun
				}
			})
			m := fakemodel.New(fakemodel.ToolCalls(
				fakemodel.Call("order", `{"item": "tea"}`),
				fakemodel.Call("order", `{"item": "tea", "user_id": "admin"}`)))
			log := &eventLog{}
			opts := []any{injectUser, toolstage.WithToolMiddleware(stop), toolstage.WithMaxConcurrency(1), toolstage.WithEventHandler(log.handle)}
			if stage {
				opts = append(opts, agent.WithMiddleware(middleware.ToolArgValidation()))
			}
			res, err := build(m, []toolstage.Tool{tool}, opts...).Run(asUser("u-1"), "tea")
			if !errors.Is(err, toolstage.ErrStopRun) || len(res.Steps) != 2 || !errors.Is(res.Steps[1].Err, toolstage.ErrCallNotStarted) {
				t.Fatalf("Run = %v with %d steps, want ErrStopRun after the first call and the second not started", err, len(res.Steps))
			}
			if s := fmt.Sprint(res.Messages, res.Steps[1].ModelArguments); strings.Contains(s, "admin") {
				t.Errorf("the forged value of the call that never started is in the transcript or its step: %s", s)
			}
			e, ok := log.find(guard.EventForgedArgument)
			if !ok || e.Tool != "order" || e.CallID != "call_2" || !slices.Equal(e.Paths, []string{"/user_id"}) {
				t.Errorf("events %v, forged_argument %+v: want one for order call_2 at /user_id", log.kinds(), e)
			}
		})
	}
}

// TestForgedNotInToolCallLimitReask: a ToolCallLimit re-ask replays the
// model's response; without ToolArgValidation before it, the forged value
// must not be replayed to the model either.
func TestForgedNotInToolCallLimitReask(t *testing.T) {
	t.Parallel()
	tool := toolstage.NewTool("order", "Order.", func(context.Context, OrderArgs) (string, error) { return "ok", nil })
	m := fakemodel.New(
		fakemodel.ToolCalls(
			fakemodel.Call("order", `{"item": "tea", "user_id": "admin"}`),
			fakemodel.Call("order", `{"item": "cake", "user_id": "admin"}`)),
		fakemodel.ToolCalls(fakemodel.Call("order", `{"item": "tea"}`)),
		fakemodel.Text("ok"),
	)
	a := build(m, []toolstage.Tool{tool}, injectUser, agent.WithMiddleware(middleware.ToolCallLimit(guard.WithRunLimit(1))))
	if _, err := a.Run(asUser("u-1"), "tea"); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d model calls, want a re-ask", len(reqs))
	}
	for i, r := range reqs {
		b, err := json.Marshal(r.Messages)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "admin"); n != 0 {
			t.Errorf("request %d holds the forged value %d times: %s", i+1, n, b)
		}
	}
}

// limitArgs' Validate speaks of the injected user at the root, as a policy
// might.
type limitArgs struct {
	Qty    int    `json:"qty"`
	UserID string `json:"user_id" toolguard:"inject"`
}

func (a limitArgs) Validate() error {
	if a.Qty > 10 {
		return fmt.Errorf("user %s may not order %d items", a.UserID, a.Qty)
	}
	return nil
}

// TestInjectedValueNotInRejectedEvent: arguments a tool middleware replaced
// that fail the schema are reported as args_rejected; the violations of a
// tool with injected arguments may quote the injected value (a Validate
// message at the root), which never goes into an event or a log line.
func TestInjectedValueNotInRejectedEvent(t *testing.T) {
	t.Parallel()
	tool := toolstage.NewTool("order", "Order.", func(context.Context, limitArgs) (string, error) { return "ok", nil })
	double := toolstage.ToolFunc(func(next toolstage.ToolHandler) toolstage.ToolHandler {
		return func(ctx context.Context, call *toolstage.ToolCall) (*toolstage.ToolResult, error) {
			c := *call
			c.Args = json.RawMessage(strings.Replace(string(call.Args), `"qty":6`, `"qty":12`, 1))
			return next(ctx, &c)
		}
	})
	var logs strings.Builder
	var mu sync.Mutex
	log := &eventLog{}
	handle := func(ctx context.Context, e guard.Event) {
		log.handle(ctx, e)
		mu.Lock()
		defer mu.Unlock()
		if e.Err != nil {
			logs.WriteString(e.Err.Error() + "\n")
		}
	}
	m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("order", `{"qty": 6}`)), fakemodel.Text("ok"))
	res, err := build(m, []toolstage.Tool{tool}, toolstage.WithToolMiddleware(double), toolstage.WithEventHandler(handle), injectUser).Run(asUser("u-secret"), "order")
	if err != nil {
		t.Fatal(err)
	}
	var rejected *toolstage.ArgsRejectedError
	if !errors.As(res.Steps[0].Err, &rejected) {
		t.Fatalf("Step.Err = %v, want an *ArgsRejectedError", res.Steps[0].Err)
	}
	if _, ok := log.find(guard.EventArgsRejected); !ok {
		t.Errorf("events %v, want args_rejected", log.kinds())
	}
	if strings.Contains(logs.String(), "u-secret") {
		t.Errorf("the injected value is in an event's error:\n%s", logs.String())
	}
}

// TestForgedReportedWhenResponseDiscarded: ToolArgValidation drops a
// forged value from a response it hands on and leaves the event to the
// agent; when a middleware outside it (ToolCallLimit, over its limit)
// discards that response and re-asks, the agent never runs those calls,
// and must still report the attempt.
func TestForgedReportedWhenResponseDiscarded(t *testing.T) {
	t.Parallel()
	tool := toolstage.NewTool("order", "Order.", func(context.Context, OrderArgs) (string, error) { return "ok", nil })
	m := fakemodel.New(
		fakemodel.ToolCalls(
			fakemodel.Call("order", `{"item": "tea", "user_id": "admin"}`),
			fakemodel.Call("order", `{"item": "cake"}`)),
		fakemodel.ToolCalls(fakemodel.Call("order", `{"item": "tea"}`)),
		fakemodel.Text("ok"),
	)
	log := &eventLog{}
	a := build(m, []toolstage.Tool{tool}, toolstage.WithEventHandler(log.handle), injectUser, agent.WithMiddleware(middleware.ToolCallLimit(guard.WithRunLimit(1)), middleware.ToolArgValidation()))
	res, err := a.Run(asUser("u-1"), "tea")
	if err != nil {
		t.Fatal(err)
	}
	e, ok := log.find(guard.EventForgedArgument)
	if !ok || e.Tool != "order" || e.CallID != "call_1" || !slices.Equal(e.Paths, []string{"/user_id"}) {
		t.Errorf("events %v, forged_argument %+v: want one for order call_1 at /user_id", log.kinds(), e)
	}
	if len(res.Steps) != 1 || res.Steps[0].CallID == "call_1" {
		t.Errorf("steps %+v, want the re-asked call only", res.Steps)
	}
}

// TestOutputSchemaWithInjectedField: the answer is the model's; a type
// whose field is tagged toolguard:"inject" would offer the model that
// field to set, so WithOutputSchema refuses it.
func TestOutputSchemaWithInjectedField(t *testing.T) {
	t.Parallel()
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "injected") {
			t.Errorf("WithOutputSchema(a schema with an injected property) panicked with %q, want a message about it", msg)
		}
	}()
	agent.WithOutputSchema(validation.Typed[OrderArgs]())
}

// TestSubAgentDoesNotInheritInjectedArgs: a sub-agent run from a tool of
// an agent with injected arguments has none of its own: its model's
// user_id for its own tool of the same name is its model's to set, not a
// forged value to drop.
func TestSubAgentDoesNotInheritInjectedArgs(t *testing.T) {
	t.Parallel()
	type lookupArgs struct {
		Item   string `json:"item"`
		UserID string `json:"user_id"`
	}
	var got string
	inner := agent.New(fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("order", `{"item": "tea", "user_id": "u-9"}`)), fakemodel.Text("found")), toolstage.New([]toolstage.Tool{toolstage.NewTool("order", "Looks up another user's order.", func(_ context.Context, a lookupArgs) (string, error) {
		got = a.UserID
		return "found", nil
	})}), agent.WithMiddleware(middleware.ToolArgValidation()))
	delegate := toolstage.NewTool("delegate", "Delegates.", func(ctx context.Context, _ struct{}) (string, error) {
		res, err := inner.Run(ctx, "look up u-9's order")
		if err != nil {
			return "", err
		}
		return res.Output, nil
	})
	order := toolstage.NewTool("order", "Order.", func(context.Context, OrderArgs) (string, error) { return "ok", nil })
	outer := build(fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("delegate", `{}`)), fakemodel.Text("ok")), []toolstage.Tool{order, delegate}, injectUser)
	if _, err := outer.Run(asUser("u-1"), "delegate"); err != nil {
		t.Fatal(err)
	}
	if got != "u-9" {
		t.Errorf("the sub-agent's tool got user_id %q, want its model's u-9", got)
	}
}

// TestCheckpointWithoutForgedValue: a checkpointed run saves each turn
// before its calls run; a run cut off inside the turn stays as saved. The
// forged value must not be in that state either.
func TestCheckpointWithoutForgedValue(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(guard.WithThread(asUser("u-1"), "t-1"))
	defer cancel()
	tool := toolstage.NewTool("order", "Order.", func(context.Context, OrderArgs) (string, error) {
		cancel() // the run is cut off while its call runs
		return "ok", nil
	})
	m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("order", `{"item": "tea", "user_id": "admin"}`)), fakemodel.Text("ok"))
	cp := new(toolstage.MemoryCheckpointer)
	_, _ = build(m, []toolstage.Tool{tool}, injectUser, agent.WithCheckpointer(cp)).Run(ctx, "tea")
	state, _, err := cp.Load(context.Background(), "t-1")
	if err != nil || state == nil {
		t.Fatalf("Load = %s, %v; want the saved state", state, err)
	}
	if strings.Contains(string(state), "admin") {
		t.Errorf("the checkpoint holds the forged value: %s", state)
	}
}

// TestForgedNotInTranscriptWithOutputSchema: with a structured answer, the
// turn's other calls run through the tool stage too; the transcript must
// not keep the forged value they carried.
func TestForgedNotInTranscriptWithOutputSchema(t *testing.T) {
	t.Parallel()
	type answer struct {
		Done bool `json:"done"`
	}
	tool := toolstage.NewTool("order", "Order.", func(context.Context, OrderArgs) (string, error) { return "ok", nil })
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("order", `{"item": "tea", "user_id": "admin"}`)),
		fakemodel.ToolCalls(fakemodel.Call(agent.OutputToolName, `{"done": true}`)),
	)
	res, err := build(m, []toolstage.Tool{tool}, injectUser, agent.WithOutputSchema(validation.Typed[answer]())).Run(asUser("u-1"), "tea")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.Messages)
	sent, _ := json.Marshal(m.Requests()[1].Messages)
	if strings.Contains(string(b)+string(sent), "admin") {
		t.Errorf("the transcript holds the forged value: %s", b)
	}
}

// TestForgedReportedForToolNameInOtherCase: ToolArgValidation drops the
// injected arguments of "order" from a call of "ORDER" (agents.Executor
// would run it as order); the agent does not know "ORDER" and never runs
// it, and must still report the attempt.
func TestForgedReportedForToolNameInOtherCase(t *testing.T) {
	t.Parallel()
	tool := toolstage.NewTool("order", "Order.", func(context.Context, OrderArgs) (string, error) { return "ok", nil })
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("ORDER", `{"item": "tea", "user_id": "admin"}`)),
		fakemodel.Text("ok"),
	)
	log := &eventLog{}
	a := build(m, []toolstage.Tool{tool}, toolstage.WithEventHandler(log.handle), injectUser, agent.WithMiddleware(middleware.ToolArgValidation()))
	res, err := a.Run(asUser("u-1"), "tea")
	if err != nil {
		t.Fatal(err)
	}
	e, ok := log.find(guard.EventForgedArgument)
	if !ok || e.Tool != "ORDER" || e.CallID != "call_1" || !slices.Equal(e.Paths, []string{"/user_id"}) {
		t.Errorf("events %v, forged_argument %+v: want one for ORDER call_1 at /user_id", log.kinds(), e)
	}
	if b, _ := json.Marshal(res.Messages); strings.Contains(string(b), "admin") {
		t.Errorf("the transcript holds the forged value: %s", b)
	}
}

// An injector that yields nothing (nil, so JSON null) for an optional
// injected property the schema types as a string: the tool stage's
// empty-value stripping would remove it and run the tool without the
// property. The call fails instead; the tool never runs.
func TestInjectedNullNeverStripped(t *testing.T) {
	t.Parallel()
	type NoteArgs struct {
		Text   string `json:"text"`
		Tenant string `json:"tenant,omitempty" toolguard:"inject"`
	}
	ran := 0
	tool := toolstage.NewTool("note", "Writes a note.", func(context.Context, NoteArgs) (string, error) {
		ran++
		return "noted", nil
	})
	model := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("note", `{"text":"hi"}`)), fakemodel.Text("done"))
	a := agent.New(model, toolstage.New([]toolstage.Tool{tool}, toolstage.Inject("tenant", func(context.Context, *toolstage.ToolCall) (any, error) { return nil, nil })))
	res, err := a.Run(context.Background(), "note hi")
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if ran != 0 {
		t.Fatalf("the tool ran without its injected tenant (steps %+v)", res.Steps)
	}
	var ie *toolstage.InjectError
	if !errors.As(res.Steps[0].Err, &ie) || ie.Name != "tenant" {
		t.Errorf("Step.Err = %v, want an *InjectError naming tenant", res.Steps[0].Err)
	}
}
