package guard_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

const (
	globalBlocked  = "Tool call limit exceeded: at most 2 tool calls are allowed per run; do not call 'search' again."
	perToolBlocked = "Tool call limit exceeded: 'search' may be called at most 2 times per run; do not call it again."
	globalEnd      = "Tool call limit reached: run limit exceeded (2/2 calls)."
	perToolEnd     = "Tool call limit reached: 'search' run limit exceeded (2/2 calls)."
)

// TestToolCallLimitContinue: with a run limit of 2, the third call is fed
// back to the model inside the same model call, and the model answers in
// text; the blocked call never reaches the agent.
func TestToolCallLimitContinue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		opts    []guard.LimitOption
		withRun bool
		want    string
	}{
		{"global from transcript", nil, false, globalBlocked},
		{"global with WithRun", nil, true, globalBlocked},
		{"per tool from transcript", []guard.LimitOption{guard.WithToolName("search")}, false, perToolBlocked},
		{"per tool with WithRun", []guard.LimitOption{guard.WithToolName("search")}, true, perToolBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(limCalls("search"), limCalls("search"), limCalls("search"), textStep("done"))
			a := newLoop(m, toolCallLimit(append(tc.opts, guard.WithRunLimit(2))...))
			ctx := context.Background()
			if tc.withRun {
				ctx = guard.WithRun(ctx)
			}
			out, err := a.turn(ctx, "find it")
			if err != nil || out != "done" {
				t.Fatalf("turn = %q, %v; want %q, nil", out, err, "done")
			}
			if want := []string{"search", "search"}; !slices.Equal(a.ran, want) {
				t.Errorf("ran %v, want %v", a.ran, want)
			}
			reqs := m.requests()
			if len(reqs) != 4 {
				t.Fatalf("model calls = %d, want 4 (2 allowed, 1 blocked, 1 re-ask)", len(reqs))
			}
			got := reasked(t, reqs[2].Msgs, reqs[3].Msgs)
			want := []replayed{{Tool: "search", ID: "call_3", Answer: tc.want}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("re-ask replayed %+v, want %+v", got, want)
			}
		})
	}
}

// TestToolCallLimitContinueFallsBackToEnd: a model that exceeds the limit
// again after the re-ask gets ExitEnd's answer.
func TestToolCallLimitContinueFallsBackToEnd(t *testing.T) {
	t.Parallel()
	m := newScript(limCalls("search"), limCalls("search"), limCalls("search"), limCalls("search"))
	var ev recorder
	a := newLoop(m, toolCallLimit(guard.WithRunLimit(2), guard.WithEventHandler(ev.handle)))
	out, err := a.turn(context.Background(), "find it")
	if err != nil || out != globalEnd {
		t.Fatalf("turn = %q, %v; want %q, nil", out, err, globalEnd)
	}
	if len(a.ran) != 2 || len(m.requests()) != 4 {
		t.Errorf("ran %v in %d model calls, want 2 calls in 4", a.ran, len(m.requests()))
	}
	// One EventLimit per blocked response, and the re-ask between them
	// announced (a streaming caller resets on it).
	events := ev.all()
	want := []struct {
		kind    guard.EventKind
		attempt int
	}{{guard.EventLimit, 1}, {guard.EventReask, 2}, {guard.EventLimit, 2}}
	if len(events) != len(want) {
		t.Fatalf("events = %+v, want limit, reask, limit", events)
	}
	for i, e := range events {
		if e.Kind != want[i].kind || e.Middleware != "ToolCallLimit" || e.Attempt != want[i].attempt {
			t.Errorf("event %d = %+v, want %s from ToolCallLimit, attempt %d", i, e, want[i].kind, want[i].attempt)
		}
		var le *guard.LimitExceededError
		if e.Kind == guard.EventLimit && !errors.As(e.Err, &le) {
			t.Errorf("event %d = %+v, want a *LimitExceededError", i, e)
		}
	}
}

func TestToolCallLimitExitEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []guard.LimitOption
		want string
	}{
		{"global", nil, globalEnd},
		{"per tool", []guard.LimitOption{guard.WithToolName("search")}, perToolEnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(limCalls("search"), limCalls("search"), limCalls("search"))
			a := newLoop(m, toolCallLimit(append(tc.opts, guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitEnd))...))
			out, err := a.turn(context.Background(), "find it")
			if err != nil || out != tc.want {
				t.Fatalf("turn = %q, %v; want %q, nil", out, err, tc.want)
			}
			if len(a.ran) != 2 || len(m.requests()) != 3 {
				t.Errorf("ran %v in %d model calls, want 2 calls in 3 (no re-ask)", a.ran, len(m.requests()))
			}
		})
	}
}

// TestToolCallLimitExitEndStandsIn: ExitEnd hands on the codec's stand-in
// answer (Codec.End), without tool calls, whose cause is the limit; the
// blocked response's text and calls are gone. (Package middleware's test of
// the same name checks the langchaingo response it builds.)
func TestToolCallLimitExitEndStandsIn(t *testing.T) {
	t.Parallel()
	m := newScript(func(_ context.Context, s *script, _ *tReq) (*tResp, error) {
		return &tResp{Text: "searching", Calls: []guard.Call{{ID: s.nextID(), Name: "search", Args: []byte(`{}`)}, {ID: s.nextID(), Name: "search", Args: []byte(`{}`)}}}, nil
	})
	h := wrap(m, toolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd)))
	resp, err := h(context.Background(), &tReq{Msgs: []msg{{Role: roleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The answer records the limit it stands for.
	var le *guard.LimitExceededError
	if !errors.As(resp.standIn, &le) || le.Limit != 1 {
		t.Errorf("stand-in cause = %v, want the *LimitExceededError", resp.standIn)
	}
	if want := "Tool call limit reached: run limit exceeded (0/1 calls)."; resp.Text != want || len(resp.Calls) != 0 {
		t.Errorf("answer = %+v, want %q without tool calls", resp, want)
	}
}

func TestToolCallLimitExitError(t *testing.T) {
	t.Parallel()
	m := newScript(limCalls("search"), limCalls("weather"), limCalls("search"))
	a := newLoop(m, toolCallLimit(guard.WithToolName("search"), guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError)))
	_, err := a.turn(context.Background(), "find it")
	var le *guard.LimitExceededError
	if !errors.As(err, &le) {
		t.Fatalf("turn error = %v, want a *LimitExceededError", err)
	}
	want := guard.LimitExceededError{Tool: "search", Scope: guard.ScopeRun, Limit: 1, Count: 1, Requested: 1}
	if *le != want {
		t.Errorf("error = %+v, want %+v", *le, want)
	}
	if got, want := err.Error(), "guard: tool call limit exceeded: 'search' run limit of 1 call (1 made, 1 more requested)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if want := []string{"search", "weather"}; !slices.Equal(a.ran, want) || len(m.requests()) != 3 {
		t.Errorf("ran %v in %d model calls, want %v in 3", a.ran, len(m.requests()), want)
	}
}

// TestToolCallLimitPerToolLeavesOtherToolsAlone: a limit on search neither
// counts nor blocks weather.
func TestToolCallLimitPerToolLeavesOtherToolsAlone(t *testing.T) {
	t.Parallel()
	m := newScript(
		limCalls("search"),
		limCalls("weather"),
		limCalls("weather", "weather"),
		limCalls("search"), // blocked
		limCalls("weather"),
		textStep("done"),
	)
	a := newLoop(m, toolCallLimit(guard.WithToolName("search"), guard.WithRunLimit(1)))
	out, err := a.turn(context.Background(), "go")
	if err != nil || out != "done" {
		t.Fatalf("turn = %q, %v; want %q, nil", out, err, "done")
	}
	if want := []string{"search", "weather", "weather", "weather", "weather"}; !slices.Equal(a.ran, want) {
		t.Errorf("ran %v, want %v", a.ran, want)
	}
	reqs := m.requests()
	got := reasked(t, reqs[3].Msgs, reqs[4].Msgs)
	want := []replayed{{Tool: "search", ID: "call_5",
		Answer: "Tool call limit exceeded: 'search' may be called at most 1 time per run; do not call it again."}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("re-ask replayed %+v, want %+v", got, want)
	}
}

// TestToolCallLimitParallelBatch: a batch of 3 calls under a limit of 2 never
// lets 3 calls out, whatever the exit behaviour.
func TestToolCallLimitParallelBatch(t *testing.T) {
	t.Parallel()
	const (
		remain  = "Not executed: this batch exceeded the tool call limit; 2 tool calls remain in this run, so re-issue at most 2."
		blocked = "Tool call limit exceeded: at most 2 tool calls are allowed per run; do not call 'search' again."
	)
	for _, tc := range []struct {
		name    string
		exit    guard.ExitBehavior
		reask   []step // the model's answer to the re-ask, if any
		wantOut string
		wantRan int
		wantErr *guard.LimitExceededError
	}{
		{name: "continue, model re-issues 2", exit: guard.ExitContinue, reask: []step{limCalls("search", "search")}, wantOut: "done", wantRan: 2},
		{name: "continue, model re-issues 3", exit: guard.ExitContinue, reask: []step{limCalls("search", "search", "search")},
			wantOut: "Tool call limit reached: run limit exceeded (0/2 calls).", wantRan: 0},
		{name: "end", exit: guard.ExitEnd, wantOut: "Tool call limit reached: run limit exceeded (0/2 calls).", wantRan: 0},
		{name: "error", exit: guard.ExitError, wantRan: 0,
			wantErr: &guard.LimitExceededError{Scope: guard.ScopeRun, Limit: 2, Count: 0, Requested: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			steps := append([]step{limCalls("search", "search", "search")}, tc.reask...)
			m := newScript(append(steps, textStep("done"))...)
			a := newLoop(m, toolCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(tc.exit)))
			out, err := a.turn(context.Background(), "go")
			if tc.wantErr != nil {
				var le *guard.LimitExceededError
				if !errors.As(err, &le) || *le != *tc.wantErr {
					t.Fatalf("turn error = %v, want %+v", err, *tc.wantErr)
				}
			} else if err != nil || out != tc.wantOut {
				t.Fatalf("turn = %q, %v; want %q, nil", out, err, tc.wantOut)
			}
			if len(a.ran) != tc.wantRan {
				t.Errorf("ran %v, want %d calls", a.ran, tc.wantRan)
			}
			if tc.exit != guard.ExitContinue {
				return
			}
			reqs := m.requests()
			got := reasked(t, reqs[0].Msgs, reqs[1].Msgs)
			want := []replayed{{"search", "call_1", remain}, {"search", "call_2", remain}, {"search", "call_3", blocked}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("re-ask replayed %+v, want %+v", got, want)
			}
		})
	}
}

// TestToolCallLimitBatchSiblings: in a blocked batch, a per-tool limit tells
// its tool's calls that fit how many remain, blocks the rest, and tells other
// tools' calls they were not executed.
func TestToolCallLimitBatchSiblings(t *testing.T) {
	t.Parallel()
	m := newScript(limCalls("search"), limCalls("search", "weather", "search", "search"), textStep("done"))
	a := newLoop(m, toolCallLimit(guard.WithToolName("search"), guard.WithRunLimit(3)))
	if _, err := a.turn(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	got := reasked(t, reqs[1].Msgs, reqs[2].Msgs)
	const remain = "Not executed: this batch exceeded the tool call limit; 2 calls of 'search' remain in this run, so re-issue at most 2."
	want := []replayed{
		{"search", "call_2", remain},
		{"weather", "call_3", "Not executed: another call in this batch exceeded the tool call limit; re-issue this call if you still need it."},
		{"search", "call_4", remain},
		{"search", "call_5", "Tool call limit exceeded: 'search' may be called at most 3 times per run; do not call it again."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("re-ask replayed\n%+v\nwant\n%+v", got, want)
	}
	if want := []string{"search"}; !slices.Equal(a.ran, want) {
		t.Errorf("ran %v, want %v", a.ran, want)
	}
}

// TestToolCallLimitCallsWithoutIDs: calls without ids are all counted, and
// the re-ask answers each under the id the codec gave it, the response's
// text replayed with them. (Package middleware's TestToolCallLimitCallsInEveryChoice
// checks langchaingo's layout: calls spread over choices.)
func TestToolCallLimitCallsWithoutIDs(t *testing.T) {
	t.Parallel()
	m := newScript(func(context.Context, *script, *tReq) (*tResp, error) {
		return &tResp{Text: "Let me look.", Calls: []guard.Call{call("search", `{}`), call("search", `{}`)}}, nil
	}, textStep("done"))
	h := wrap(m, toolCallLimit(guard.WithRunLimit(1)))
	msgs := []msg{{Role: roleUser, Text: "hi"}}
	if _, err := h(context.Background(), &tReq{Msgs: msgs}); err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	got := reasked(t, msgs, reqs[1].Msgs)
	if len(got) != 2 || got[0].ID == got[1].ID || !strings.HasPrefix(got[1].Answer, "Tool call limit exceeded") {
		t.Errorf("re-ask replayed %+v, want 2 calls with distinct ids, the second blocked", got)
	}
	if turn := reqs[1].Msgs[1]; turn.Text != "Let me look." {
		t.Errorf("replayed model turn = %+v, want the response's text with the calls", turn)
	}
}

// TestToolCallLimitRunsAreIndependent: each run has its own count, whether it
// is read from the transcript (a new human message starts a run) or started
// with WithRun.
func TestToolCallLimitRunsAreIndependent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ctx  func() context.Context // per turn
	}{
		{"transcript", context.Background},
		{"WithRun", func() context.Context { return guard.WithRun(context.Background()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(limCalls("search"), limCalls("search"), textStep("one"), limCalls("search"), limCalls("search"), textStep("two"))
			a := newLoop(m, toolCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitError)))
			for _, want := range []string{"one", "two"} {
				if out, err := a.turn(tc.ctx(), "go"); err != nil || out != want {
					t.Fatalf("turn = %q, %v; want %q, nil", out, err, want)
				}
			}
			if len(a.ran) != 4 {
				t.Errorf("ran %v, want 4 calls", a.ran)
			}
		})
	}

	// One run context for two turns is one run: WithRun wins over the
	// transcript.
	t.Run("WithRun shared by two turns", func(t *testing.T) {
		t.Parallel()
		m := newScript(limCalls("search"), limCalls("search"), textStep("one"), limCalls("search"))
		a := newLoop(m, toolCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitEnd)))
		ctx := guard.WithRun(context.Background())
		if _, err := a.turn(ctx, "go"); err != nil {
			t.Fatal(err)
		}
		out, err := a.turn(ctx, "again")
		if err != nil || out != globalEnd {
			t.Errorf("second turn = %q, %v; want %q, nil", out, err, globalEnd)
		}
	})
}

// TestToolCallLimitThread: a thread limit holds across the runs of one
// thread, and not across threads.
func TestToolCallLimitThread(t *testing.T) {
	t.Parallel()
	const threadEnd = "Tool call limit reached: thread limit exceeded (3/3 calls)."
	t.Run("WithThread", func(t *testing.T) {
		t.Parallel()
		store := guard.NewMemoryThreadStore(10)
		limit := toolCallLimit(guard.WithRunLimit(2), guard.WithThreadLimit(3),
			guard.WithExitBehavior(guard.ExitEnd), guard.WithThreadStore(store))
		run := func(thread string, steps ...step) (string, []string) {
			// A fresh agent each time: the thread count cannot come from
			// the transcript.
			a := newLoop(newScript(steps...), limit)
			out, err := a.turn(guard.WithThread(guard.WithRun(context.Background()), thread), "go")
			if err != nil {
				t.Fatal(err)
			}
			return out, a.ran
		}
		if out, ran := run("a", limCalls("search"), limCalls("weather"), textStep("one")); out != "one" || len(ran) != 2 {
			t.Errorf("thread a, run 1 = %q after %v, want %q after 2 calls", out, ran, "one")
		}
		if out, ran := run("a", limCalls("search"), limCalls("search")); out != threadEnd || len(ran) != 1 {
			t.Errorf("thread a, run 2 = %q after %v, want %q after 1 call", out, ran, threadEnd)
		}
		if out, ran := run("b", limCalls("search"), limCalls("search"), textStep("b")); out != "b" || len(ran) != 2 {
			t.Errorf("thread b = %q after %v, want %q after 2 calls", out, ran, "b")
		}
		for thread, want := range map[string]int{"a": 3, "b": 2} {
			if got := store.Count(guard.ThreadKey{Thread: thread}); got != want {
				t.Errorf("store.Count(%q) = %d, want %d", thread, got, want)
			}
		}
	})
	t.Run("transcript", func(t *testing.T) {
		t.Parallel()
		limit := toolCallLimit(guard.WithRunLimit(2), guard.WithThreadLimit(3), guard.WithExitBehavior(guard.ExitEnd))
		m := newScript(limCalls("search"), limCalls("search"), textStep("one"), limCalls("search"), limCalls("search"))
		a := newLoop(m, limit)
		if out, err := a.turn(context.Background(), "go"); err != nil || out != "one" {
			t.Fatalf("turn 1 = %q, %v; want %q, nil", out, err, "one")
		}
		if out, err := a.turn(context.Background(), "again"); err != nil || out != threadEnd {
			t.Fatalf("turn 2 = %q, %v; want %q, nil", out, err, threadEnd)
		}
		if len(a.ran) != 3 {
			t.Errorf("ran %v, want 3 calls", a.ran)
		}
		// Another conversation through the same wrapped model is another
		// thread.
		b := &loop{h: a.h}
		m.add(limCalls("search"), textStep("b"))
		if out, err := b.turn(context.Background(), "hello"); err != nil || out != "b" || len(b.ran) != 1 {
			t.Errorf("other conversation = %q, %v after %v; want %q after 1 call", out, err, b.ran, "b")
		}
	})
}

// limStubborn answers every call with a new search call.
func limStubborn(n int) []step {
	var id atomic.Int64
	st := step(func(context.Context, *script, *tReq) (*tResp, error) {
		return &tResp{Calls: []guard.Call{{ID: "c" + strconv.FormatInt(id.Add(1), 10), Name: "search", Args: []byte(`{}`)}}}, nil
	})
	steps := make([]step, n)
	for i := range steps {
		steps[i] = st
	}
	return steps
}

// TestToolCallLimitConcurrentRuns: 100 runs at once on one wrapped model
// each get exactly their limit, and runs of one thread share theirs exactly.
func TestToolCallLimitConcurrentRuns(t *testing.T) {
	t.Parallel()
	const runs = 100
	for _, tc := range []struct {
		name    string
		opts    []guard.LimitOption
		ctx     func() context.Context
		perRun  int // calls each run makes, -1: any
		wantAll int // calls all runs make together
	}{
		{"runs from transcript", []guard.LimitOption{guard.WithRunLimit(2)},
			context.Background, 2, 2 * runs},
		{"runs from WithRun", []guard.LimitOption{guard.WithRunLimit(2)},
			func() context.Context { return guard.WithRun(context.Background()) }, 2, 2 * runs},
		{"one thread", []guard.LimitOption{guard.WithRunLimit(1), guard.WithThreadLimit(5)},
			func() context.Context {
				return guard.WithThread(guard.WithRun(context.Background()), "shared")
			}, -1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(limStubborn(4 * runs)...)
			limit := toolCallLimit(tc.opts...)
			var wg sync.WaitGroup
			ran := make([]int, runs)
			errs := make([]error, runs)
			for i := range runs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a := newLoop(m, limit)
					out, err := a.turn(tc.ctx(), "go")
					if err == nil && !strings.HasPrefix(out, "Tool call limit reached") {
						err = fmt.Errorf("run %d answered %q, want the limit text", i, out)
					}
					ran[i], errs[i] = len(a.ran), err
				}()
			}
			wg.Wait()
			all := 0
			for i := range runs {
				if errs[i] != nil {
					t.Error(errs[i])
				}
				if tc.perRun >= 0 && ran[i] != tc.perRun {
					t.Errorf("run %d made %d calls, want %d", i, ran[i], tc.perRun)
				}
				all += ran[i]
			}
			if all != tc.wantAll {
				t.Errorf("all runs made %d calls, want %d", all, tc.wantAll)
			}
		})
	}
}

// TestToolCallLimitStacked: limiters compose. An inner limiter's count of a
// response that an outer one blocks is taken back, and limiters sharing a
// count (the same run, or the same store) count each call once.
func TestToolCallLimitStacked(t *testing.T) {
	t.Parallel()
	t.Run("outer block releases inner count", func(t *testing.T) {
		t.Parallel()
		m := newScript(
			limCalls("search"),
			limCalls("search"),  // inner lets it out (2/2), outer blocks it
			limCalls("weather"), // the re-ask: fits the inner limit only if the blocked search was taken back
			textStep("done"),
		)
		a := newLoop(m,
			toolCallLimit(guard.WithToolName("search"), guard.WithRunLimit(1)),
			toolCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitError)),
		)
		out, err := a.turn(guard.WithRun(context.Background()), "go")
		if err != nil || out != "done" {
			t.Fatalf("turn = %q, %v; want %q, nil", out, err, "done")
		}
		if want := []string{"search", "weather"}; !slices.Equal(a.ran, want) {
			t.Errorf("ran %v, want %v", a.ran, want)
		}
	})
	t.Run("replayed calls do not count for inner limiters", func(t *testing.T) {
		t.Parallel()
		m := newScript(
			limCalls("weather"),
			limCalls("search", "search"), // inner: 2/2, outer blocks: 3/2
			limCalls("search"),           // the outer re-ask shows 2 searches that never ran
			textStep("done"),
		)
		a := newLoop(m,
			toolCallLimit(guard.WithRunLimit(2)),
			toolCallLimit(guard.WithToolName("search"), guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitError)),
		)
		out, err := a.turn(context.Background(), "go")
		if err != nil || out != "done" {
			t.Fatalf("turn = %q, %v; want %q, nil", out, err, "done")
		}
		if want := []string{"weather", "search"}; !slices.Equal(a.ran, want) {
			t.Errorf("ran %v, want %v", a.ran, want)
		}
	})
	t.Run("inner block re-asks before outer sees it", func(t *testing.T) {
		t.Parallel()
		m := newScript(
			limCalls("search"),
			limCalls("search", "weather"),  // inner blocks: search 2/1
			limCalls("weather"),            // inner's re-ask; outer: 2/3
			limCalls("weather", "weather"), // outer blocks: 4/3
			limCalls("weather"),            // outer's re-ask, through the inner one
			textStep("done"),
		)
		var ev recorder
		a := newLoop(m,
			toolCallLimit(guard.WithRunLimit(3), guard.WithEventHandler(ev.handle)),
			toolCallLimit(guard.WithToolName("search"), guard.WithRunLimit(1), guard.WithEventHandler(ev.handle)),
		)
		out, err := a.turn(context.Background(), "go")
		if err != nil || out != "done" {
			t.Fatalf("turn = %q, %v; want %q, nil", out, err, "done")
		}
		if want := []string{"search", "weather", "weather"}; !slices.Equal(a.ran, want) {
			t.Errorf("ran %v, want %v", a.ran, want)
		}
		var tools []string
		for _, e := range ev.all() {
			tools = append(tools, string(e.Kind)+":"+e.Tool)
		}
		if want := []string{"limit:search", "reask:search", "limit:", "reask:"}; !slices.Equal(tools, want) {
			t.Errorf("events by kind:tool = %q, want %q (inner blocks and re-asks, then outer)", tools, want)
		}
	})
	for _, tc := range []struct {
		name         string
		outer, inner guard.LimitOption
		ctx          context.Context
	}{
		{"same run", guard.WithRunLimit(3), guard.WithRunLimit(5), guard.WithRun(context.Background())},
		{"same thread store", guard.WithThreadLimit(3), guard.WithThreadLimit(5), guard.WithThread(context.Background(), "t")},
	} {
		t.Run("shared count: "+tc.name, func(t *testing.T) {
			t.Parallel()
			store := guard.NewMemoryThreadStore(10)
			outer, inner := tc.outer, tc.inner
			m := newScript(limCalls("search"), limCalls("search"), limCalls("search"), limCalls("search"))
			llm := wrap(m,
				toolCallLimit(outer, guard.WithThreadStore(store), guard.WithExitBehavior(guard.ExitError)),
				toolCallLimit(inner, guard.WithThreadStore(store), guard.WithExitBehavior(guard.ExitError)),
			)
			for i := range 3 {
				if _, err := llm(tc.ctx, &tReq{}); err != nil {
					t.Fatalf("call %d: %v, want it within the outer limit of 3", i+1, err)
				}
			}
			var le *guard.LimitExceededError
			if _, err := llm(tc.ctx, &tReq{}); !errors.As(err, &le) || le.Limit != 3 || le.Count != 3 {
				t.Errorf("call 4: %v, want the outer limit exceeded at 3/3", err)
			}
		})
	}
}

type failingStore struct{ err error }

func (s *failingStore) Reserve(context.Context, guard.ThreadKey, int, int) (int, bool, error) {
	return 0, false, s.err
}
func (s *failingStore) Release(context.Context, guard.ThreadKey, int) error { return nil }

func TestToolCallLimitThreadStoreErrorFailsTheCall(t *testing.T) {
	t.Parallel()
	boom := errors.New("redis down")
	m := newScript(limCalls("search"))
	h := wrap(m, toolCallLimit(guard.WithThreadLimit(3), guard.WithThreadStore(&failingStore{boom})))
	_, err := h(guard.WithThread(context.Background(), "t"), &tReq{})
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "guard: ") {
		t.Errorf("call error = %v, want a guard: error wrapping %v", err, boom)
	}
}

func TestToolCallLimitPassesTextAndErrors(t *testing.T) {
	t.Parallel()
	text := &tResp{Text: "hi"}
	boom := errors.New("model down")
	m := newScript(
		func(context.Context, *script, *tReq) (*tResp, error) {
			return text, nil
		},
		failStep(boom),
	)
	h := wrap(m, toolCallLimit(guard.WithRunLimit(1)))
	if resp, err := h(context.Background(), &tReq{}); resp != text || err != nil {
		t.Errorf("text response: call = %v, %v; want it untouched", resp, err)
	}
	if _, err := h(context.Background(), &tReq{}); err != boom {
		t.Errorf("model error: call error = %v, want %v unchanged", err, boom)
	}
}

func TestToolCallLimitCancelledBeforeReask(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m := newScript(func(ctx context.Context, s *script, r *tReq) (*tResp, error) {
		cancel()
		return limCalls("search", "search")(ctx, s, r)
	})
	h := wrap(m, toolCallLimit(guard.WithRunLimit(1)))
	if _, err := h(ctx, &tReq{}); !errors.Is(err, context.Canceled) || len(m.requests()) != 1 {
		t.Errorf("call = %v after %d model calls, want context.Canceled after 1", err, len(m.requests()))
	}
}

func TestToolCallLimitOptionPanics(t *testing.T) {
	t.Parallel()
	for name, f := range map[string]func(){
		"no limit":             func() { toolCallLimit() },
		"only a tool name":     func() { toolCallLimit(guard.WithToolName("search")) },
		"run above thread":     func() { toolCallLimit(guard.WithRunLimit(5), guard.WithThreadLimit(3)) },
		"zero run limit":       func() { guard.WithRunLimit(0) },
		"negative thread":      func() { guard.WithThreadLimit(-1) },
		"empty tool name":      func() { guard.WithToolName("") },
		"unknown exit":         func() { guard.WithExitBehavior(guard.ExitBehavior(9)) },
		"nil store":            func() { guard.WithThreadStore(nil) },
		"zero-capacity memory": func() { guard.NewMemoryThreadStore(0) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "guard: ") {
					t.Errorf("panic = %v, want a clear guard: message", r)
				}
			}()
			f()
		})
	}
	// Equal limits are fine.
	toolCallLimit(guard.WithRunLimit(3), guard.WithThreadLimit(3))
}

// valueStore is a ThreadStore used by value: equal values share one count.
type valueStore struct{ s *guard.MemoryThreadStore }

func (v valueStore) Reserve(ctx context.Context, key guard.ThreadKey, n, limit int) (int, bool, error) {
	return v.s.Reserve(ctx, key, n, limit)
}
func (v valueStore) Release(ctx context.Context, key guard.ThreadKey, n int) error {
	return v.s.Release(ctx, key, n)
}

// unhashableStore cannot be compared with ==: stacked limiters never take
// two of them for one store, whatever they hold.
type unhashableStore struct {
	valueStore
	tags []string
}

// TestToolCallLimitStackedStoreIdentity: stacked limiters recognise a shared
// store by ==, with no requirement on how the store is implemented: a
// pointer, a comparable value, or a value that cannot be compared (never
// recognised, so each limiter counts, and nothing panics).
func TestToolCallLimitStackedStoreIdentity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		store     func(*guard.MemoryThreadStore) guard.ThreadStore
		wantCount int // the shared count after one call
	}{
		{"one pointer", func(m *guard.MemoryThreadStore) guard.ThreadStore { return m }, 1},
		{"equal values", func(m *guard.MemoryThreadStore) guard.ThreadStore { return valueStore{m} }, 1},
		{"values that cannot be compared", func(m *guard.MemoryThreadStore) guard.ThreadStore {
			return unhashableStore{valueStore{m}, []string{"a"}}
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mem := guard.NewMemoryThreadStore(10)
			m := newScript(limCalls("search"))
			llm := wrap(m,
				toolCallLimit(guard.WithThreadLimit(5), guard.WithThreadStore(tc.store(mem))),
				toolCallLimit(guard.WithThreadLimit(5), guard.WithThreadStore(tc.store(mem))),
			)
			if _, err := llm(guard.WithThread(context.Background(), "t"), &tReq{}); err != nil {
				t.Fatal(err)
			}
			if got := mem.Count(guard.ThreadKey{Thread: "t"}); got != tc.wantCount {
				t.Errorf("count after one call = %d, want %d", got, tc.wantCount)
			}
		})
	}
}
