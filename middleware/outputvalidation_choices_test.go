package middleware_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/repair"
)

// choices is a model step answering with one choice per text, as
// langchaingo's Anthropic provider answers with one choice per content
// block. Each text is streamed as a chunk first when the caller streams.
func choices(texts ...string) fakemodel.Step {
	return fakemodel.Func(func(ctx context.Context, _ []llms.MessageContent, o llms.CallOptions) (*llms.ContentResponse, error) {
		resp := &llms.ContentResponse{}
		for _, s := range texts {
			if o.StreamingFunc != nil && s != "" {
				if err := o.StreamingFunc(ctx, []byte(s)); err != nil {
					return nil, err
				}
			}
			resp.Choices = append(resp.Choices, &llms.ContentChoice{Content: s, StopReason: "end_turn"})
		}
		return resp, nil
	})
}

// The attack: an answer whose choices joined are valid, but whose first
// choice — what llms.GenerateFromSinglePrompt, chains and langchaingo's
// agents read — is not. OutputValidation must check what the caller
// reads: the caller gets a valid answer or an error, never an unchecked
// one.
func TestOutputValidationChecksWhatTheCallerReads(t *testing.T) {
	t.Parallel()
	const good = `{"label":"spam","score":3}`
	for _, tc := range []struct {
		name  string
		steps []fakemodel.Step
		opts  []guard.ValidationOption
		want  string // what GenerateFromSinglePrompt returns; "" for an error
		calls int
	}{
		{name: "a blank choice before a valid one: re-asked",
			steps: []fakemodel.Step{choices("\n", good), choices(good)}, want: good, calls: 2},
		{name: "a blank choice after a valid one: re-asked",
			steps: []fakemodel.Step{choices(good, " "), choices(good)}, want: good, calls: 2},
		{name: "an answer split across choices: never valid",
			steps: []fakemodel.Step{choices(`{"label":"spam",`, `"score":3}`), choices(`{"label":"spam",`, `"score":3}`)},
			opts:  []guard.ValidationOption{guard.WithMaxRetries(1)}, calls: 2},
		{name: "prose in a choice of its own, repair on: re-asked",
			steps: []fakemodel.Step{choices("Here is the answer:", good), choices(good)},
			opts:  []guard.ValidationOption{guard.WithRepair(repair.Default())}, want: good, calls: 2},
		{name: "an invalid choice before a valid one: re-asked",
			steps: []fakemodel.Step{choices(`{"label":"maybe","score":3}`, good), choices(good)}, want: good, calls: 2},
		{name: "a choice without text first (Anthropic's thinking block): the answer is moved to Choices[0]",
			steps: []fakemodel.Step{choices("", good)}, want: good, calls: 1},
		{name: "a choice without text first, the answer cleaned: the cleaned answer is in Choices[0]",
			steps: []fakemodel.Step{choices("", "```json\n"+good+"\n```")},
			opts:  []guard.ValidationOption{guard.WithRepair(repair.Default())}, want: good, calls: 1},
		{name: "several valid choices (llms.WithN): accepted, each cleaned",
			steps: []fakemodel.Step{choices(good, `{"label":"spam","score":"3"}`)}, want: good, calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := fakemodel.New(tc.steps...)
			model := middleware.Wrap(m, middleware.OutputValidation(answerSchema, tc.opts...))
			got, err := llms.GenerateFromSinglePrompt(context.Background(), model, "Classify: WIN A PRIZE")
			switch {
			case tc.want == "" && !errors.Is(err, guard.ErrNoOutput):
				t.Errorf("GenerateFromSinglePrompt() = %q, %v; want an error wrapping ErrNoOutput", got, err)
			case tc.want != "" && (err != nil || got != tc.want):
				t.Errorf("GenerateFromSinglePrompt() = %q, %v; want %q", got, err, tc.want)
			}
			if n := len(m.Requests()); n != tc.calls {
				t.Errorf("model calls = %d, want %d", n, tc.calls)
			}
		})
	}
}

// Every choice of an accepted response is a valid answer, cleaned in
// place, and the text of all choices joined (ResponseText, what package
// agent reads) is the answer, not the answer plus what was not checked.
func TestOutputValidationEveryChoiceChecked(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(choices("", `{"label":"spam","score":"3"}`), choices(`{"label":"ham","score":1}`, `{"label":"spam","score":"2"}`))
	model := middleware.Wrap(m, middleware.OutputValidation(answerSchema))
	resp, err := model.GenerateContent(context.Background(), ask)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{resp.Choices[0].Content, resp.Choices[1].Content}; got[0] != `{"label":"spam","score":3}` || got[1] != "" {
		t.Errorf("choices = %q, want the cleaned answer in the first, the second empty", got)
	}
	if got := middleware.ResponseText(resp); got != `{"label":"spam","score":3}` {
		t.Errorf("ResponseText = %q, want the cleaned answer alone", got)
	}
	resp, err = model.GenerateContent(context.Background(), ask)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{resp.Choices[0].Content, resp.Choices[1].Content}; got[0] != `{"label":"ham","score":1}` || got[1] != `{"label":"spam","score":2}` {
		t.Errorf("choices = %q, want each answer valid and cleaned in place", got)
	}
}

// The re-ask of a response whose text came in several choices tells the
// model what was wrong with the first invalid one, and that every part is
// read as a whole answer.
func TestOutputValidationSeveralChoicesFeedback(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(choices("\n", `{"label":"spam","score":3}`), choices(`{"label":"spam","score":3}`))
	if _, err := middleware.Wrap(m, middleware.OutputValidation(answerSchema)).GenerateContent(context.Background(), ask); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2: the response is re-asked", len(reqs))
	}
	second := reqs[1].Messages
	if len(second) != 3 {
		t.Fatalf("re-ask = %+v, want human, AI (the rejected answer), human (feedback)", second)
	}
	if got := second[1].Parts[0].(llms.TextContent).Text; got != "\n\n"+`{"label":"spam","score":3}` {
		t.Errorf("replayed answer = %q, want the response's text", got)
	}
	fb := second[2].Parts[0].(llms.TextContent).Text
	for _, want := range []string{"the answer is empty", "2 text parts"} {
		if !strings.Contains(fb, want) {
			t.Errorf("feedback = %q, want it to contain %q", fb, want)
		}
	}
}

// Streaming: what is streamed is what the caller reads, and it was
// checked: a response whose choices joined are valid but whose first
// choice is not is never streamed as the answer.
func TestOutputValidationStreamsWhatWasChecked(t *testing.T) {
	t.Parallel()
	const good = `{"label":"ham","score":1}`
	for _, tc := range []struct {
		name  string
		steps []fakemodel.Step
	}{
		{"a blank choice before a valid one", []fakemodel.Step{choices("\n", `{"label":"spam","score":3}`), choices(good)}},
		{"an answer split across choices", []fakemodel.Step{choices(`{"label":"spam",`, `"score":3}`), choices(good)}},
		{"a choice without text first", []fakemodel.Step{choices("", good)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var streamed strings.Builder
			model := middleware.Wrap(fakemodel.New(tc.steps...), middleware.OutputValidation(answerSchema))
			got, err := llms.GenerateFromSinglePrompt(context.Background(), model, "Classify: WIN A PRIZE",
				llms.WithStreamingFunc(func(_ context.Context, c []byte) error {
					streamed.Write(c)
					return nil
				}))
			if err != nil || got != good || streamed.String() != good {
				t.Errorf("GenerateFromSinglePrompt() = %q, %v, streamed %q; want %q streamed and returned", got, err, streamed.String(), good)
			}
		})
	}
}
