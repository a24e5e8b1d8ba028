package sdktest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// A custom (freeform) tool call streamed beside a function call reaches
// openai-go through httpguard whole: ChatCompletionAccumulator takes every
// chunk, the accumulated completion holds both calls (the custom one by
// its id and type; openai-go's chunk type has no custom member, its input
// is in the chunk's raw JSON, in one piece), and the function call's
// arguments are the validated ones.
func TestGuardedOpenAIChatCustomCallStreamed(t *testing.T) {
	t.Parallel()
	chunk := func(delta, finish string) string {
		return `data: {"id":"chatcmpl-up","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	srv := fp.New(fp.Handle(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, chunk(`{"role":"assistant","content":null}`, "null"),
			chunk(`{"tool_calls":[{"index":0,"id":"call_f","type":"function","function":{"name":"get_weather","arguments":"{\"city\": "}}]}`, "null"),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\", \"days\": \"3\"}"}}]}`, "null"),
			chunk(`{"tool_calls":[{"index":1,"id":"call_c","type":"custom","custom":{"name":"shell","input":"ls "}}]}`, "null"),
			chunk(`{"tool_calls":[{"index":1,"custom":{"input":"-la"}}]}`, "null"),
			chunk(`{}`, `"tool_calls"`), "data: [DONE]\n\n")
	}))
	defer srv.Close()
	p := guardedChatParams()
	p.Tools = append(p.Tools, openai.ChatCompletionToolUnionParam{OfCustom: &openai.ChatCompletionCustomToolParam{
		Custom: openai.ChatCompletionCustomToolCustomParam{Name: "shell"}}})
	var events []guard.Event
	stream := guardedOpenAI(srv, &events).Chat.Completions.NewStreaming(context.Background(), p)
	var acc openai.ChatCompletionAccumulator
	var raw strings.Builder
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("AddChunk refused %s", stream.Current().RawJSON())
		}
		raw.WriteString(stream.Current().RawJSON())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	calls := acc.Choices[0].Message.ToolCalls
	if len(calls) != 2 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Paris","days":3}` ||
		calls[1].ID != "call_c" || calls[1].Type != "custom" {
		t.Errorf("the accumulated calls are %+v", calls)
	}
	if !strings.Contains(raw.String(), `"custom":{"name":"shell","input":"ls -la"}`) {
		t.Errorf("the custom call did not reach the client whole:\n%s", raw.String())
	}
}
