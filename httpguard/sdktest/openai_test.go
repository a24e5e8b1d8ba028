package sdktest

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

func openaiClient(srv *fp.Server, opts ...option.RequestOption) *openai.Client {
	c := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(srv.URL + "/v1/"), option.WithAPIKey("sk-test")}, opts...)...)
	return &c
}

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: weatherParams(),
		})},
	}
}

func responsesParams() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris?")},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: weatherParams()}}},
	}
}

// The fake speaks Chat Completions as openai-go reads it: text, a call
// through AsFunction, the finish reason and usage, sync and streamed
// through ChatCompletionAccumulator.
func TestOpenAIChatReadsFake(t *testing.T) {
	t.Parallel()
	reply := fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": "Paris"}`), fp.Call("get_weather", `{"city": 4`)).WithUsage(11, 7)
	srv := fp.New(reply, reply)
	defer srv.Close()
	client := openaiClient(srv)
	ctx := context.Background()

	cc, err := client.Chat.Completions.New(ctx, chatParams())
	if err != nil {
		t.Fatal(err)
	}
	// The accumulator fills the union's fields but not its raw JSON, so
	// AsFunction() reads nothing from an accumulated completion: streamed
	// calls are read through the union's fields.
	check := func(name string, c openai.ChatCompletion, asFunction bool) {
		t.Helper()
		m := c.Choices[0].Message
		if m.Content != "Let me check." || c.Choices[0].FinishReason != "tool_calls" || len(m.ToolCalls) != 2 {
			t.Fatalf("%s: message %+v, finish %q", name, m, c.Choices[0].FinishReason)
		}
		for i, want := range []string{`{"city": "Paris"}`, `{"city": 4`} {
			u := m.ToolCalls[i]
			if u.ID == "" || u.Type != "function" || u.Function.Name != "get_weather" || u.Function.Arguments != want {
				t.Errorf("%s: call %d = %+v, want arguments %s", name, i, u, want)
			}
			if f := u.AsFunction(); asFunction && (f.ID != u.ID || f.Function.Arguments != want) {
				t.Errorf("%s: call %d AsFunction() = %+v, want arguments %s", name, i, f, want)
			}
		}
		if c.Usage.PromptTokens != 11 || c.Usage.CompletionTokens != 7 {
			t.Errorf("%s: usage %+v", name, c.Usage)
		}
	}
	check("sync", *cc, true)

	p := chatParams()
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	finished := 0
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("AddChunk refused %s", stream.Current().RawJSON())
		}
		if _, ok := acc.JustFinishedToolCall(); ok {
			finished++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	check("stream", acc.ChatCompletion, false)
	if finished != 2 {
		t.Errorf("JustFinishedToolCall fired %d times, want 2", finished)
	}
	if got := srv.Requests(); len(got) != 2 || got[0].Path != "/v1/chat/completions" || got[1].Stream != true {
		t.Errorf("requests = %+v", got)
	}
}

// The fake speaks Responses as openai-go reads it: output items
// (reasoning, message, function_call), sync and streamed.
func TestOpenAIResponsesReadsFake(t *testing.T) {
	t.Parallel()
	reply := fp.Reply(fp.Thinking("think", "enc1"), fp.Text("Let me check."), fp.Call("get_weather", `{"city": "Paris"}`)).WithUsage(11, 7)
	srv := fp.New(reply, reply)
	defer srv.Close()
	client := openaiClient(srv)
	ctx := context.Background()

	check := func(name string, r *responses.Response) {
		t.Helper()
		if len(r.Output) != 3 {
			t.Fatalf("%s: %d output items, want 3: %s", name, len(r.Output), r.RawJSON())
		}
		if rs := r.Output[0].AsReasoning(); rs.EncryptedContent != "enc1" || rs.Summary[0].Text != "think" {
			t.Errorf("%s: reasoning %+v", name, rs)
		}
		if r.OutputText() != "Let me check." {
			t.Errorf("%s: OutputText() = %q", name, r.OutputText())
		}
		fc := r.Output[2].AsFunctionCall()
		if fc.Name != "get_weather" || fc.Arguments != `{"city": "Paris"}` || fc.CallID == "" {
			t.Errorf("%s: AsFunctionCall() = %+v", name, fc)
		}
		if r.Usage.InputTokens != 11 || r.Usage.OutputTokens != 7 {
			t.Errorf("%s: usage %+v", name, r.Usage)
		}
	}
	r, err := client.Responses.New(ctx, responsesParams())
	if err != nil {
		t.Fatal(err)
	}
	check("sync", r)

	stream := client.Responses.NewStreaming(ctx, responsesParams())
	var text, args string
	var done *responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.AsResponseOutputTextDelta().Delta
		case "response.function_call_arguments.delta":
			args += ev.AsResponseFunctionCallArgumentsDelta().Delta
		case "response.completed":
			c := ev.AsResponseCompleted().Response
			done = &c
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if text != "Let me check." || args != `{"city": "Paris"}` || done == nil {
		t.Fatalf("stream: text %q, args %q, completed %v", text, args, done != nil)
	}
	check("stream", done)
}
