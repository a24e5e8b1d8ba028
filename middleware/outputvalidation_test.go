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
)

// answerSchema is the structured answer of the OutputValidation tests.
const answerSchema = `{"type":"object","properties":{"label":{"enum":["spam","ham"]},"score":{"type":"integer"},"note":{"type":"string"}},"required":["label","score"],"additionalProperties":false}`

var ask = []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Classify: WIN A PRIZE")}

// OutputValidation's own behaviour is tested in package guard, over a test
// codec; what remains here is langchaingo's: its Executor, its OpenAI
// client, and the stand-in answers of the codec.

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
