package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/retry"
	"github.com/toolguard/toolguard/validation"
)

// answerSchema is the structured answer of the OutputValidation tests.
const answerSchema = `{"type":"object","properties":{"label":{"enum":["spam","ham"]},"score":{"type":"integer"},"note":{"type":"string"}},"required":["label","score"],"additionalProperties":false}`

var ask = []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Classify: WIN A PRIZE")}

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
			steps := make([]fakemodel.Step, len(tc.answers))
			for i, a := range tc.answers {
				steps[i] = fakemodel.Text(a)
			}
			m := fakemodel.New(steps...)
			var rec recorder
			mw := middleware.OutputValidation(answerSchema, append(tc.opts, guard.WithEventHandler(rec.handle))...)
			resp, err := middleware.Wrap(m, mw).GenerateContent(context.Background(), ask)
			if err != nil {
				t.Fatalf("GenerateContent: %v", err)
			}
			if got := middleware.ResponseText(resp); got != tc.want {
				t.Errorf("answer = %q, want %q", got, tc.want)
			}
			if n := len(m.Requests()); n != tc.calls {
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
	m := fakemodel.New(fakemodel.Text(`{"label":"maybe"}`), fakemodel.Text(`{"label":"ham","score":"x"}`), fakemodel.Text(`{"label":"ham","score":1}`))
	if _, err := middleware.Wrap(m, middleware.OutputValidation(answerSchema)).GenerateContent(context.Background(), ask); err != nil {
		t.Fatal(err)
	}
	reqs := m.Requests()
	third := reqs[2].Messages
	if len(third) != 3 || third[1].Role != llms.ChatMessageTypeAI || third[2].Role != llms.ChatMessageTypeHuman {
		t.Fatalf("third request = %+v, want human, AI (rejected answer), human (feedback)", third)
	}
	if got := third[1].Parts[0].(llms.TextContent).Text; got != `{"label":"ham","score":"x"}` {
		t.Errorf("replayed answer = %q, want the second (latest) one", got)
	}
	fb := third[2].Parts[0].(llms.TextContent).Text
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
	m := fakemodel.New(fakemodel.Text("spam"), fakemodel.Text("spam"))
	_, err := middleware.Wrap(m, middleware.OutputValidation(answerSchema, guard.WithMaxRetries(1))).GenerateContent(context.Background(), ask)
	var ioe *guard.InvalidOutputError
	var ve *validation.Error
	if !errors.As(err, &ioe) || ioe.Attempts != 2 || !errors.Is(err, guard.ErrNoOutput) || !errors.As(err, &ve) {
		t.Fatalf("error = %v, want an *InvalidOutputError after 2 calls wrapping ErrNoOutput and the *validation.Error", err)
	}
}

// A response with tool calls is not an answer: it passes untouched.
func TestOutputValidationPassesToolCalls(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city":"Paris"}`)))
	resp, err := middleware.Wrap(m, middleware.OutputValidation(answerSchema)).GenerateContent(context.Background(), ask)
	if err != nil || len(resp.Choices[0].ToolCalls) != 1 || len(m.Requests()) != 1 {
		t.Fatalf("GenerateContent = %+v, %v; want the tool call, one model call", resp, err)
	}
}

// Limits and ModelRetry inside OutputValidation: a stand-in answer is an
// error, never taken for the answer.
func TestOutputValidationStandIns(t *testing.T) {
	t.Parallel()
	err503 := errors.New("API returned unexpected status code: 503: overloaded")
	history := append(slices.Clone(ask), llms.TextParts(llms.ChatMessageTypeAI, "thinking"))
	for _, tc := range []struct {
		name  string
		steps []fakemodel.Step
		msgs  []llms.MessageContent
		inner middleware.Middleware
		as    any
	}{
		{"ModelCallLimit ExitEnd", nil, history, middleware.ModelCallLimit(guard.WithRunLimit(1)), new(*guard.LimitExceededError)},
		{"ToolCallLimit ExitEnd", []fakemodel.Step{fakemodel.ToolCalls(fakemodel.Call("get_weather", `{}`), fakemodel.Call("get_weather", `{}`))}, ask,
			middleware.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd)), new(*guard.LimitExceededError)},
		{"ModelRetry ContinueOnFailure", []fakemodel.Step{fakemodel.Fail(err503)}, ask,
			middleware.ModelRetry(guard.WithMaxRetries(0), guard.WithOnFailure(guard.ContinueOnFailure)), new(*retry.Error)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := fakemodel.New(tc.steps...)
			_, err := middleware.Wrap(m, middleware.OutputValidation(answerSchema), tc.inner).GenerateContent(context.Background(), tc.msgs)
			if !errors.Is(err, guard.ErrNoOutput) || !errors.As(err, tc.as) {
				t.Fatalf("error = %v, want ErrNoOutput wrapping %T", err, tc.as)
			}
		})
	}
	// A transient failure is retried inside and the answer validated.
	m := fakemodel.New(fakemodel.Fail(err503), fakemodel.Text(`{"label":"ham","score":0}`))
	resp, err := middleware.Wrap(m, middleware.OutputValidation(answerSchema), middleware.ModelRetry(noWait())).GenerateContent(context.Background(), ask)
	if err != nil || middleware.ResponseText(resp) != `{"label":"ham","score":0}` {
		t.Errorf("after a retry: %v, %v", resp, err)
	}
}

// An unchanged langchaingo Executor ends with a valid JSON answer, or an
// error: never the limit's text.
func TestOutputValidationInLangchainExecutor(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(execSearch("a"), fakemodel.Text("```json\n{\"label\": \"spam\", \"score\": 3}\n```"))
	ex := newExecutor(m, &execTool{name: "search"}, middleware.OutputValidation(answerSchema, guard.WithRepair(repair.Default())))
	out, err := chains.Run(context.Background(), ex, "classify")
	if err != nil || out != `{"label":"spam","score":3}` {
		t.Fatalf("Executor = %q, %v; want the cleaned JSON", out, err)
	}
	m = fakemodel.New(execSearch("a"), execSearch("b"), execSearch("c"))
	ex = newExecutor(m, &execTool{name: "search"}, middleware.OutputValidation(answerSchema), middleware.ModelCallLimit(guard.WithRunLimit(2)))
	out, err = chains.Run(context.Background(), ex, "classify")
	if !errors.Is(err, guard.ErrNoOutput) {
		t.Fatalf("Executor at the limit = %q, %v; want ErrNoOutput", out, err)
	}
}

// Streaming: a rejected answer is never streamed; the accepted one is,
// once; a tool-calling turn's text is released as it came.
func TestOutputValidationStreaming(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(fakemodel.Text(`{"label":"maybe"}`), fakemodel.Text("```json\n{\"label\":\"ham\",\"score\":1}\n```"))
	var tp tape
	resp, err := middleware.Wrap(m, middleware.OutputValidation(answerSchema, guard.WithRepair(repair.Default()))).
		GenerateContent(tp.observe(context.Background()), ask, llms.WithStreamingFunc(tp.chunk))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"<reask>", `{"label":"ham","score":1}`}
	if got := tp.all(); !slices.Equal(got, want) || middleware.ResponseText(resp) != want[1] {
		t.Errorf("streamed %q, answer %q; want %q", got, middleware.ResponseText(resp), want)
	}

	tool := fakemodel.Func(func(ctx context.Context, _ []llms.MessageContent, o llms.CallOptions) (*llms.ContentResponse, error) {
		for _, c := range []string{"Let me ", "check."} {
			if err := o.StreamingFunc(ctx, []byte(c)); err != nil {
				return nil, err
			}
		}
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "Let me check.",
			ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: `{}`}}}}}}, nil
	})
	var tp2 tape
	if _, err := middleware.Wrap(fakemodel.New(tool), middleware.OutputValidation(answerSchema)).
		GenerateContent(context.Background(), ask, llms.WithStreamingFunc(tp2.chunk)); err != nil {
		t.Fatal(err)
	}
	if got, want := tp2.all(), []string{"Let me ", "check."}; !slices.Equal(got, want) {
		t.Errorf("tool turn streamed %q, want %q", got, want)
	}
}

// Through langchaingo's real OpenAI client against a loopback server:
// JSON mode, a fenced and invalid first answer, re-asked; streaming shows
// only the accepted answer.
func TestOutputValidationThroughOpenAIProvider(t *testing.T) {
	t.Parallel()
	srv := &streamServer{replies: []reply{
		oaiCalls("```json\n{\"label\": \"maybe\", \"score\": 3}\n```"),
		oaiCalls(`{"label": "spam", "score": 3}`),
	}}
	llm := middleware.Wrap(openaiClient(t, srv.serve(t)), middleware.OutputValidation(answerSchema, guard.WithRepair(repair.Default())))
	var tp tape
	resp, err := llm.GenerateContent(tp.observe(context.Background()), ask, llms.WithJSONMode(), llms.WithStreamingFunc(tp.chunk))
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	want := []string{"<reask>", `{"label": "spam", "score": 3}`}
	if got := tp.all(); !slices.Equal(got, want) {
		t.Errorf("streamed %q, want %q", got, want)
	}
	if got := middleware.ResponseText(resp); got != want[1] {
		t.Errorf("answer = %q", got)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.got) != 2 {
		t.Fatalf("provider got %d requests, want 2", len(srv.got))
	}
	msgs := srv.got[1]["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	prev := msgs[len(msgs)-2].(map[string]any)
	content, _ := last["content"].(string)
	if last["role"] != "user" || prev["role"] != "assistant" || !strings.HasPrefix(content, errfmt.PrefixInvalidAnswer) || !strings.Contains(content, "the answer is not valid JSON: ") {
		b, _ := json.Marshal(msgs)
		t.Errorf("re-ask messages = %s, want the rejected answer then the feedback", b)
	}
	if rf, _ := srv.got[0]["response_format"].(map[string]any); rf["type"] != "json_object" {
		t.Errorf("response_format = %v, want JSON mode", srv.got[0]["response_format"])
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
			middleware.OutputValidation(schema)
		}()
	}
}

func TestStandInError(t *testing.T) {
	t.Parallel()
	if err := middleware.StandInError(nil); err != nil {
		t.Errorf("StandInError(nil) = %v", err)
	}
	own := &llms.ContentResponse{Choices: []*llms.ContentChoice{nil, {Content: "hi", GenerationInfo: map[string]any{"x": 1}}}}
	if err := middleware.StandInError(own); err != nil {
		t.Errorf("StandInError(the model's answer) = %v, want nil", err)
	}
	boom := errors.New("boom")
	llm := middleware.Wrap(fakemodel.New(fakemodel.Fail(boom)),
		middleware.ModelRetry(guard.WithMaxRetries(0), guard.WithOnFailure(guard.ContinueOnFailure)))
	resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
	var re *retry.Error
	if err != nil || !errors.As(middleware.StandInError(resp), &re) || !errors.Is(re, boom) {
		t.Errorf("ContinueOnFailure's answer: StandInError = %v (err %v), want the *retry.Error of boom", middleware.StandInError(resp), err)
	}
}
