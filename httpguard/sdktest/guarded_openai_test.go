package sdktest

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

func guardedOpenAI(srv *fp.Server, events *[]guard.Event) *openai.Client {
	return openaiClient(srv, option.WithHTTPClient(guardedClient(events)), option.WithMaxRetries(0))
}

func guardedChatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris for 3 days?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: daysParams(),
		})},
	}
}

// openai-go, Chat Completions: the bad call is caught and re-asked, the
// corrected call's coerced arguments are what AsFunction() and ToParam()
// read.
func TestGuardedOpenAIChat(t *testing.T) {
	t.Parallel()
	srv := fp.New(badThenGood()...)
	defer srv.Close()
	var events []guard.Event
	cc, err := guardedOpenAI(srv, &events).Chat.Completions.New(context.Background(), guardedChatParams())
	if err != nil {
		t.Fatal(err)
	}
	checkReask(t, srv, events)
	tr := &transcript{title: "openai-go v3 Chat Completions, sync, through httpguard.New(nil, httpguard.ToolArgValidation())"}
	m := cc.Choices[0].Message
	if len(m.ToolCalls) != 1 {
		t.Fatalf("%d calls: %s", len(m.ToolCalls), cc.RawJSON())
	}
	fn := m.ToolCalls[0].AsFunction()
	tr.read("Choices[0].Message.ToolCalls[0].AsFunction().Function.Arguments", fn.Function.Arguments)
	if !jsonEq(t, fn.Function.Arguments, correctedArgs) || fn.Function.Name != "get_weather" {
		t.Errorf("AsFunction() = %+v", fn)
	}
	p := m.ToParam().OfAssistant.ToolCalls[0].OfFunction
	tr.read("Choices[0].Message.ToParam().OfAssistant.ToolCalls[0].OfFunction.Function.Arguments", p.Function.Arguments)
	if !jsonEq(t, p.Function.Arguments, correctedArgs) || p.ID != fn.ID {
		t.Errorf("ToParam() = %+v", p)
	}
	tr.read("Choices[0].Message.Content", m.Content)
	tr.check(t, "openai-chat", srv)
}

// openai-go, Chat Completions streamed: ChatCompletionAccumulator takes
// every chunk, JustFinishedToolCall fires once with the corrected call,
// and the text is the first attempt's.
func TestGuardedOpenAIChatStream(t *testing.T) {
	t.Parallel()
	srv := fp.New(badThenGood()...)
	defer srv.Close()
	var events []guard.Event
	p := guardedChatParams()
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := guardedOpenAI(srv, &events).Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	var finished []openai.FinishedChatCompletionToolCall
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("AddChunk refused %s", stream.Current().RawJSON())
		}
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	checkReask(t, srv, events)
	tr := &transcript{title: "openai-go v3 Chat Completions, streamed into openai.ChatCompletionAccumulator, through httpguard.New(nil, httpguard.ToolArgValidation())"}
	if len(finished) != 1 {
		t.Fatalf("JustFinishedToolCall fired %d times, want 1", len(finished))
	}
	tr.read("JustFinishedToolCall().Arguments", finished[0].Arguments)
	m := acc.Choices[0].Message
	// The accumulator leaves the union's raw JSON empty, so AsFunction()
	// reads nothing from an accumulated completion: the fields are read.
	tr.read("acc.Choices[0].Message.ToolCalls[0].Function.Arguments", m.ToolCalls[0].Function.Arguments)
	tr.read("acc.Choices[0].Message.Content", m.Content)
	tr.read("acc.Choices[0].FinishReason", acc.Choices[0].FinishReason)
	if len(m.ToolCalls) != 1 || !jsonEq(t, finished[0].Arguments, correctedArgs) || !jsonEq(t, m.ToolCalls[0].Function.Arguments, correctedArgs) ||
		m.Content != "Let me check." || acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("accumulated %+v", acc.ChatCompletion)
	}
	tr.check(t, "openai-chat-stream", srv)
}

func guardedResponsesParams() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris for 3 days?")},
		Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: daysParams()}}},
	}
}

// functionCall returns the only function call of r's output.
func functionCall(t *testing.T, r *responses.Response) responses.ResponseFunctionToolCall {
	t.Helper()
	var out []responses.ResponseFunctionToolCall
	for _, it := range r.Output {
		if it.Type == "function_call" {
			out = append(out, it.AsFunctionCall())
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d function calls: %s", len(out), r.RawJSON())
	}
	return out[0]
}

// openai-go, Responses: AsFunctionCall() reads the corrected call.
func TestGuardedOpenAIResponses(t *testing.T) {
	t.Parallel()
	srv := fp.New(badThenGood()...)
	defer srv.Close()
	var events []guard.Event
	r, err := guardedOpenAI(srv, &events).Responses.New(context.Background(), guardedResponsesParams())
	if err != nil {
		t.Fatal(err)
	}
	checkReask(t, srv, events)
	tr := &transcript{title: "openai-go v3 Responses, sync, through httpguard.New(nil, httpguard.ToolArgValidation())"}
	fc := functionCall(t, r)
	tr.read("Output[function_call].AsFunctionCall().Arguments", fc.Arguments)
	tr.read("OutputText()", r.OutputText())
	if !jsonEq(t, fc.Arguments, correctedArgs) || fc.Name != "get_weather" {
		t.Errorf("AsFunctionCall() = %+v", fc)
	}
	tr.check(t, "openai-responses", srv)
}

// openai-go, Responses streamed: the typed events hold the corrected call,
// sequence numbers run on, and response.completed's response holds what
// the client read.
func TestGuardedOpenAIResponsesStream(t *testing.T) {
	t.Parallel()
	srv := fp.New(badThenGood()...)
	defer srv.Close()
	var events []guard.Event
	stream := guardedOpenAI(srv, &events).Responses.NewStreaming(context.Background(), guardedResponsesParams())
	var text, deltas, done string
	var completed *responses.Response
	seq := int64(0)
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Errorf("sequence_number %d, want %d", ev.SequenceNumber, seq)
		}
		seq++
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.AsResponseOutputTextDelta().Delta
		case "response.function_call_arguments.delta":
			deltas += ev.AsResponseFunctionCallArgumentsDelta().Delta
		case "response.function_call_arguments.done":
			done = ev.AsResponseFunctionCallArgumentsDone().Arguments
		case "response.completed":
			c := ev.AsResponseCompleted().Response
			completed = &c
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	checkReask(t, srv, events)
	tr := &transcript{title: "openai-go v3 Responses, streamed, through httpguard.New(nil, httpguard.ToolArgValidation())"}
	if completed == nil {
		t.Fatal("no response.completed")
	}
	fc := functionCall(t, completed)
	tr.read("response.function_call_arguments.delta (joined)", deltas)
	tr.read("response.function_call_arguments.done Arguments", done)
	tr.read("response.completed Response.Output[function_call].AsFunctionCall().Arguments", fc.Arguments)
	tr.read("response.output_text.delta (joined)", text)
	tr.read("response.completed Response.ID", completed.ID)
	if !jsonEq(t, deltas, correctedArgs) || !jsonEq(t, done, correctedArgs) || !jsonEq(t, fc.Arguments, correctedArgs) || text != "Let me check." {
		t.Errorf("stream read deltas %s, done %s, completed %s, text %q", deltas, done, fc.Arguments, text)
	}
	tr.check(t, "openai-responses-stream", srv)
}
