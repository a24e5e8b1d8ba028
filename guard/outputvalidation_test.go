package guard_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/retry"
	"github.com/toolguard/toolguard/validation"
)

// answerSchema is the structured answer of the OutputValidation tests.
const answerSchema = `{"type":"object","properties":{"label":{"enum":["spam","ham"]},"score":{"type":"integer"},"note":{"type":"string"}},"required":["label","score"],"additionalProperties":false}`

// ask is the question of the OutputValidation tests.
func ask() *tReq { return &tReq{Msgs: []msg{{Role: roleUser, Text: "Classify: WIN A PRIZE"}}} }

func TestOutputValidation(t *testing.T) {
	t.Parallel()
	const good = `{"label":"spam","score":3}`
	repairOn := []guard.ValidationOption{guard.WithRepair(repair.Default())}
	for _, tc := range []struct {
		name     string
		answers  []string
		opts     []guard.ValidationOption
		want     string // the returned text
		calls    int
		repaired []string
		stripped []string
	}{
		{name: "valid: untouched", answers: []string{"{\"label\": \"spam\", \"score\": 3}\n"}, want: "{\"label\": \"spam\", \"score\": 3}\n", calls: 1},
		{name: "invalid: re-asked", answers: []string{`{"label":"maybe","score":3}`, good}, want: good, calls: 2},
		{name: "fenced, repair off: re-asked", answers: []string{"```json\n" + good + "\n```", good}, want: good, calls: 2},
		{name: "fenced, repair on: cleaned", answers: []string{"```json\n{\"label\": \"spam\", \"score\": 3}\n```"}, opts: repairOn,
			want: good, calls: 1, repaired: []string{"code_fence"}},
		{name: "prose, repair on: cleaned", answers: []string{"Here is the answer: " + good + " Hope it helps."}, opts: repairOn,
			want: good, calls: 1, repaired: []string{"prose"}},
		{name: "number string, repair on: cleaned", answers: []string{`{"label":"spam","score":"3"}`}, opts: repairOn,
			want: good, calls: 1, repaired: []string{"number_string at /score"}},
		{name: "number string, default coercions: cleaned", answers: []string{`{"label":"spam","score":"3"}`},
			want: good, calls: 1, repaired: []string{"number_string at /score"}},
		{name: "number string, repair.None: re-asked", answers: []string{`{"label":"spam","score":"3"}`, good},
			opts: []guard.ValidationOption{guard.WithRepair(repair.None())}, want: good, calls: 2},
		{name: "empty value stripped", answers: []string{`{"label":"spam","score":3,"note":null}`}, want: good, calls: 1, stripped: []string{"/note"}},
		{name: "empty answer: re-asked", answers: []string{"", good}, want: good, calls: 2},
		{name: "plain text: re-asked", answers: []string{"It is spam.", good}, want: good, calls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			steps := make([]step, len(tc.answers))
			for i, a := range tc.answers {
				steps[i] = textStep(a)
			}
			m := newScript(steps...)
			var rec recorder
			mw := outputValidation(answerSchema, append(tc.opts, guard.WithEventHandler(rec.handle))...)
			resp, err := wrap(m, mw)(context.Background(), ask())
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if got := resp.Text; got != tc.want {
				t.Errorf("answer = %q, want %q", got, tc.want)
			}
			if n := len(m.requests()); n != tc.calls {
				t.Errorf("model calls = %d, want %d", n, tc.calls)
			}
			var repaired, stripped []string
			for _, e := range rec.all() {
				if e.Middleware != "OutputValidation" {
					t.Errorf("event %v from %q", e.Kind, e.Middleware)
				}
				switch e.Kind {
				case guard.EventRepaired:
					repaired = e.Paths
				case guard.EventStripped:
					stripped = e.Paths
				}
			}
			if !slices.Equal(repaired, tc.repaired) || !slices.Equal(stripped, tc.stripped) {
				t.Errorf("repaired %q, stripped %q; want %q, %q", repaired, stripped, tc.repaired, tc.stripped)
			}
		})
	}
}

// The re-ask has ToolArgValidation's shape for a text answer: the original
// messages, the rejected answer, the feedback — not cumulative.
func TestOutputValidationReaskLayout(t *testing.T) {
	t.Parallel()
	m := newScript(textStep(`{"label":"maybe"}`), textStep(`{"label":"ham","score":"x"}`), textStep(`{"label":"ham","score":1}`))
	if _, err := wrap(m, outputValidation(answerSchema))(context.Background(), ask()); err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	third := reqs[2].Msgs
	if len(third) != 3 || !reflect.DeepEqual(third[0], ask().Msgs[0]) || third[1].Role != roleModel || third[2].Role != roleNote {
		t.Fatalf("third request = %+v, want the question, the model's turn (rejected answer), the feedback", third)
	}
	if got := third[1].Text; got != `{"label":"ham","score":"x"}` {
		t.Errorf("replayed answer = %q, want the second (latest) one", got)
	}
	fb := third[2].Text
	s, err := validation.Compile(answerSchema)
	if err != nil {
		t.Fatal(err)
	}
	var ve *validation.Error
	if !errors.As(s.ValidateJSON([]byte(`{"label":"ham","score":"x"}`)), &ve) {
		t.Fatal("the answer should be invalid")
	}
	if want := errfmt.Answer(ve); fb != want {
		t.Errorf("feedback = %q, want %q", fb, want)
	}
}

func TestOutputValidationFailsClosed(t *testing.T) {
	t.Parallel()
	m := newScript(textStep("spam"), textStep("spam"))
	_, err := wrap(m, outputValidation(answerSchema, guard.WithMaxRetries(1)))(context.Background(), ask())
	var ioe *guard.InvalidOutputError
	var ve *validation.Error
	if !errors.As(err, &ioe) || ioe.Attempts != 2 || !errors.Is(err, guard.ErrNoOutput) || !errors.As(err, &ve) {
		t.Fatalf("error = %v, want an *InvalidOutputError after 2 calls wrapping ErrNoOutput and the *validation.Error", err)
	}
}

// A response with tool calls is not an answer: it passes untouched.
func TestOutputValidationPassesToolCalls(t *testing.T) {
	t.Parallel()
	m := newScript(callsStep(call("get_weather", `{"city":"Paris"}`)))
	resp, err := wrap(m, outputValidation(answerSchema))(context.Background(), ask())
	if err != nil || len(resp.Calls) != 1 || len(m.requests()) != 1 {
		t.Fatalf("call = %+v, %v; want the tool call, one model call", resp, err)
	}
}

// Limits and ModelRetry inside OutputValidation: a stand-in answer is an
// error, never taken for the answer.
func TestOutputValidationStandIns(t *testing.T) {
	t.Parallel()
	err503 := errors.New("API returned unexpected status code: 503: overloaded")
	history := ask()
	history.Msgs = append(history.Msgs, msg{Role: roleModel, Text: "thinking"})
	for _, tc := range []struct {
		name  string
		steps []step
		msgs  *tReq
		inner guard.Middleware[*tReq, *tResp]
		as    any
	}{
		{"ModelCallLimit ExitEnd", nil, history, modelCallLimit(guard.WithRunLimit(1)), new(*guard.LimitExceededError)},
		{"ToolCallLimit ExitEnd", []step{callsStep(call("get_weather", `{}`), call("get_weather", `{}`))}, ask(),
			toolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd)), new(*guard.LimitExceededError)},
		{"ModelRetry ContinueOnFailure", []step{failStep(err503)}, ask(),
			modelRetry(guard.WithMaxRetries(0), guard.WithOnFailure(guard.ContinueOnFailure)), new(*retry.Error)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newScript(tc.steps...)
			_, err := wrap(m, outputValidation(answerSchema), tc.inner)(context.Background(), tc.msgs)
			if !errors.Is(err, guard.ErrNoOutput) || !errors.As(err, tc.as) {
				t.Fatalf("error = %v, want ErrNoOutput wrapping %T", err, tc.as)
			}
		})
	}
	// A transient failure is retried inside and the answer validated.
	m := newScript(failStep(err503), textStep(`{"label":"ham","score":0}`))
	resp, err := wrap(m, outputValidation(answerSchema), modelRetry(noWait()))(context.Background(), ask())
	if err != nil || resp.Text != `{"label":"ham","score":0}` {
		t.Errorf("after a retry: %v, %v", resp, err)
	}
}

// Streaming: a rejected answer is never streamed; the accepted one is,
// once; a tool-calling turn's text is released as it came.
func TestOutputValidationStreaming(t *testing.T) {
	t.Parallel()
	m := newScript(textStep(`{"label":"maybe"}`), textStep("```json\n{\"label\":\"ham\",\"score\":1}\n```"))
	var tp tape
	req := ask()
	req.Out = tp.sink
	resp, err := wrap(m, outputValidation(answerSchema, guard.WithRepair(repair.Default())))(tp.observe(context.Background()), req)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"<reask>", `{"label":"ham","score":1}`}
	if got := tp.all(); !slices.Equal(got, want) || resp.Text != want[1] {
		t.Errorf("streamed %q, answer %q; want %q", got, resp.Text, want)
	}

	tool := func(ctx context.Context, _ *script, r *tReq) (*tResp, error) {
		for _, c := range []string{"Let me ", "check."} {
			if err := r.emit(ctx, part{Data: c}); err != nil {
				return nil, err
			}
		}
		return &tResp{Text: "Let me check.", Calls: []guard.Call{{ID: "c1", Name: "get_weather", Args: []byte(`{}`)}}}, nil
	}
	var tp2 tape
	req = ask()
	req.Out = tp2.sink
	if _, err := wrap(newScript(tool), outputValidation(answerSchema))(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got, want := tp2.all(), []string{"Let me ", "check."}; !slices.Equal(got, want) {
		t.Errorf("tool turn streamed %q, want %q", got, want)
	}
}

func TestOutputValidationMisconfigured(t *testing.T) {
	t.Parallel()
	for _, schema := range []any{nil, `{"type": 12}`} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("OutputValidation(%v) did not panic", schema)
				}
			}()
			outputValidation(schema)
		}()
	}
}
