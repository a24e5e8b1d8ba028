package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// modelEnd is ModelCallLimit's ExitEnd answer for a limit of 2.
const modelEnd = "Model call limit reached: run limit exceeded (2/2 calls)."

// modelCalls makes n model calls through llm with ctx and returns the texts of
// the answers (the ExitEnd text, or "tools" for a tool-call response) and
// the first error.
func modelCalls(ctx context.Context, llm guard.Handler[*tReq, *tResp], n int) ([]string, error) {
	var got []string
	for range n {
		resp, err := llm(ctx, question(limTools...))
		if err != nil {
			return got, err
		}
		if len(resp.Calls) > 0 {
			got = append(got, "tools")
		} else {
			got = append(got, resp.Text)
		}
	}
	return got, nil
}

func TestModelCallLimitBlocksBeforeTheModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		opts      []guard.LimitOption
		ctx       func() context.Context
		wantTexts []string
		wantCalls int
	}{
		{"run limit, ExitEnd by default", []guard.LimitOption{guard.WithRunLimit(2)},
			func() context.Context { return guard.WithRun(context.Background()) },
			[]string{"tools", "tools", modelEnd, modelEnd}, 2},
		{"thread limit", []guard.LimitOption{guard.WithThreadLimit(3)},
			func() context.Context { return guard.WithThread(context.Background(), "chat-1") },
			[]string{"tools", "tools", "tools", "Model call limit reached: thread limit exceeded (3/3 calls)."}, 3},
		{"run within thread: the run's is reached first", []guard.LimitOption{guard.WithRunLimit(2), guard.WithThreadLimit(5)},
			func() context.Context {
				return guard.WithRun(guard.WithThread(context.Background(), "chat-1"))
			},
			[]string{"tools", "tools", modelEnd}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(limCalls("search"), limCalls("search"), limCalls("search"), limCalls("search"))
			llm := wrap(m, modelCallLimit(tc.opts...))
			got, err := modelCalls(tc.ctx(), llm, len(tc.wantTexts))
			if err != nil || strings.Join(got, "|") != strings.Join(tc.wantTexts, "|") {
				t.Errorf("ModelCallLimit answers = %q, %v; want %q, nil", got, err, tc.wantTexts)
			}
			if n := len(m.requests()); n != tc.wantCalls {
				t.Errorf("the model saw %d requests, want %d", n, tc.wantCalls)
			}
		})
	}
}

func TestModelCallLimitExitError(t *testing.T) {
	t.Parallel()
	var rec recorder
	m := newScript(limCalls("search"), limCalls("search"))
	llm := wrap(m, modelCallLimit(guard.WithRunLimit(1),
		guard.WithExitBehavior(guard.ExitError), guard.WithEventHandler(rec.handle)))
	ctx := guard.WithRun(context.Background())
	_, err := modelCalls(ctx, llm, 2)
	var le *guard.LimitExceededError
	if !errors.As(err, &le) {
		t.Fatalf("second call error = %v, want a *LimitExceededError", err)
	}
	want := guard.LimitExceededError{Scope: guard.ScopeRun, Limit: 1, Count: 1, Requested: 1, Kind: guard.CountModelCalls}
	if *le != want {
		t.Errorf("LimitExceededError = %+v, want %+v", *le, want)
	}
	if got, want := err.Error(), "guard: model call limit exceeded: run limit of 1 call (1 made, 1 more requested)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if n := len(m.requests()); n != 1 {
		t.Errorf("the model saw %d requests, want 1", n)
	}
	if e, ok := rec.find(guard.EventLimit); !ok || e.Middleware != "ModelCallLimit" || !errors.Is(e.Err, le) {
		t.Errorf("EventLimit = %+v, %v; want one from ModelCallLimit carrying the error", e, ok)
	}
}

// Without a run scope, the AI messages after the last human message are
// the run's model calls; every AI message is the thread's.
func TestModelCallLimitReadsTheTranscript(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opt  guard.LimitOption
		want []string // answers of the first turn, then of the second
	}{
		{"run limit resets each turn", guard.WithRunLimit(2), []string{modelEnd, modelEnd}},
		{"thread limit spans the turns", guard.WithThreadLimit(3), []string{
			"Model call limit reached: thread limit exceeded (3/3 calls).",
			"Model call limit reached: thread limit exceeded (4/3 calls)."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(limCalls("search"), limCalls("search"), limCalls("search"), limCalls("search"), limCalls("search"))
			a := newLoop(m, modelCallLimit(tc.opt))
			var got []string
			for _, input := range []string{"first", "second"} {
				out, err := a.turn(context.Background(), input)
				if err != nil {
					t.Fatalf("turn(%q) error %v", input, err)
				}
				got = append(got, out)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("turns answered %q, want %q", got, tc.want)
			}
		})
	}
}

func TestModelCallLimitErrorsDoNotCount(t *testing.T) {
	t.Parallel()
	boom := errors.New("503 service unavailable")
	store := guard.NewMemoryThreadStore(10)
	m := newScript(failStep(boom), limCalls("search"), failStep(boom), limCalls("search"))
	llm := wrap(m, modelCallLimit(guard.WithRunLimit(2), guard.WithThreadLimit(2), guard.WithThreadStore(store)))
	ctx := guard.WithRun(guard.WithThread(context.Background(), "t"))
	for i, wantErr := range []bool{true, false, true, false} {
		_, err := llm(ctx, question(limTools...))
		if (err != nil) != wantErr {
			t.Fatalf("call %d: error %v, want error: %v", i+1, err, wantErr)
		}
	}
	key := guard.ThreadKey{Thread: "t", Kind: guard.CountModelCalls}
	if got := store.Count(key); got != 2 {
		t.Errorf("store.Count(%+v) = %d, want 2: failed calls are released", key, got)
	}
}

// Outermost, a logical call is one step however many re-asks it takes;
// inside ToolArgValidation, every request counts.
func TestModelCallLimitPlacement(t *testing.T) {
	t.Parallel()
	bad := callsStep(call("get_weather", `{"city": 75001}`))
	good := callsStep(call("get_weather", `{"city": "Paris"}`))
	for _, tc := range []struct {
		name     string
		stack    func(limit guard.Middleware[*tReq, *tResp]) []guard.Middleware[*tReq, *tResp]
		wantText string // "" for the corrected tool call
		wantReqs int
	}{
		{"outermost counts the step", func(l guard.Middleware[*tReq, *tResp]) []guard.Middleware[*tReq, *tResp] {
			return []guard.Middleware[*tReq, *tResp]{l, toolArgValidation()}
		}, "", 2},
		{"inside validation counts the re-ask", func(l guard.Middleware[*tReq, *tResp]) []guard.Middleware[*tReq, *tResp] {
			return []guard.Middleware[*tReq, *tResp]{toolArgValidation(), l}
		}, "Model call limit reached: run limit exceeded (1/1 calls).", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(bad, good)
			llm := wrap(m, tc.stack(modelCallLimit(guard.WithRunLimit(1)))...)
			resp, err := llm(guard.WithRun(context.Background()), question(weatherTool))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantText == "" && (len(resp.Calls) != 1 || string(resp.Calls[0].Args) != `{"city": "Paris"}`) {
				t.Errorf("answer = %+v, want the corrected call", resp)
			}
			if tc.wantText != "" && resp.Text != tc.wantText {
				t.Errorf("answer = %q, want %q", resp.Text, tc.wantText)
			}
			if n := len(m.requests()); n != tc.wantReqs {
				t.Errorf("the model saw %d requests, want %d", n, tc.wantReqs)
			}
		})
	}
}

// ModelCallLimit and ToolCallLimit count in one store under different keys.
func TestModelCallLimitSharesAStoreWithToolCallLimit(t *testing.T) {
	t.Parallel()
	store := guard.NewMemoryThreadStore(10)
	m := newScript(limCalls("search", "search"), limCalls("search"), textStep("done"))
	a := newLoop(m,
		modelCallLimit(guard.WithThreadLimit(3), guard.WithThreadStore(store)),
		toolCallLimit(guard.WithThreadLimit(3), guard.WithThreadStore(store)),
	)
	out, err := a.turn(guard.WithThread(context.Background(), "chat"), "go")
	if err != nil || out != "done" {
		t.Fatalf("turn = %q, %v; want %q, nil", out, err, "done")
	}
	for _, tc := range []struct {
		key  guard.ThreadKey
		want int
	}{
		{guard.ThreadKey{Thread: "chat"}, 3},
		{guard.ThreadKey{Thread: "chat", Kind: guard.CountModelCalls}, 3},
	} {
		if got := store.Count(tc.key); got != tc.want {
			t.Errorf("store.Count(%+v) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

func TestModelCallLimitPanics(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []guard.LimitOption
		want string
	}{
		{"no limit", nil, "set WithRunLimit, WithThreadLimit or both"},
		{"tool name", []guard.LimitOption{guard.WithRunLimit(1), guard.WithToolName("search")}, "WithToolName(\"search\") does not apply"},
		{"ExitContinue", []guard.LimitOption{guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitContinue)}, "ExitContinue) does not apply"},
		{"run over thread", []guard.LimitOption{guard.WithRunLimit(3), guard.WithThreadLimit(2)}, "the run limit (3) exceeds the thread limit (2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "guard: ModelCallLimit: ") || !strings.Contains(msg, tc.want) {
					t.Errorf("ModelCallLimit(%s) panicked with %q, want a guard: ModelCallLimit: message containing %q", tc.name, msg, tc.want)
				}
			}()
			modelCallLimit(tc.opts...)
		})
	}
}

// Stacked in one run, an outer ModelCallLimit counts steps and an inner one
// (inside ToolArgValidation) requests, each against its own count.
func TestModelCallLimitStackedRunCountsApart(t *testing.T) {
	t.Parallel()
	bad := callsStep(call("get_weather", `{"city": 75001}`))
	good := callsStep(call("get_weather", `{"city": "Paris"}`))
	m := newScript(bad, good, good, bad, good)
	llm := wrap(m,
		modelCallLimit(guard.WithRunLimit(3)), // steps
		toolArgValidation(),
		modelCallLimit(guard.WithRunLimit(4)), // requests
	)
	ctx := guard.WithRun(context.Background())
	var got []string
	for range 3 {
		resp, err := llm(ctx, question(weatherTool))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Calls) > 0 {
			got = append(got, string(resp.Calls[0].Args))
		} else {
			got = append(got, resp.Text)
		}
	}
	// Step 1 takes 2 requests, step 2 one; step 3's re-ask is the fifth
	// request, over the inner limit of 4, though only the third step.
	want := []string{`{"city": "Paris"}`, `{"city": "Paris"}`, "Model call limit reached: run limit exceeded (4/4 calls)."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("three steps answered %q, want %q", got, want)
	}
	if n := len(m.requests()); n != 4 {
		t.Errorf("the model saw %d requests, want 4", n)
	}
}
