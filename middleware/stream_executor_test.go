package middleware_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
)

// TestStreamingThroughLangchainExecutor runs an unchanged langchaingo
// Executor and OpenAIFunctionsAgent, streaming (chains.WithStreamingFunc;
// in v0.1.14 the agent's own callbacks handler is overridden by the chain
// options' nil streaming function, so that is the way to stream),
// over langchaingo's OpenAI client and a loopback SSE server, with the
// recommended stack. The rejected call's deltas never reach the handler;
// the reset comes before the re-ask's chunks; the accepted call arrives
// whole, once, and is the one the tool runs with.
func TestStreamingThroughLangchainExecutor(t *testing.T) {
	t.Parallel()
	srv := &streamServer{replies: []reply{
		oaiAnswer("", "call_1", "search", `{"__arg1": 42}`),
		oaiAnswer("", "call_2", "search", `{"__arg1": "Paris"}`),
		oaiAnswer("Sunny in Paris.", "", "", ""),
	}}
	llm := middleware.Wrap(openaiClient(t, srv.serve(t)),
		middleware.ToolCallLimit(guard.WithRunLimit(5)),
		middleware.ToolArgValidation(),
		middleware.ModelRetry(noWait()),
	)
	var tp tape
	search := &execTool{name: "search"}
	agent := agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{search})
	ex := agents.NewExecutor(agent, agents.WithMaxIterations(5))

	out, err := chains.Run(tp.observe(context.Background()), ex, "Weather in Paris?", chains.WithStreamingFunc(tp.chunk))
	if err != nil || out != "Sunny in Paris." {
		t.Fatalf("Executor answered %q, %v; want %q, nil", out, err, "Sunny in Paris.")
	}
	if got, want := search.calls(), []string{"Paris"}; !slices.Equal(got, want) {
		t.Errorf("search ran with %q, want %q", got, want)
	}
	want := []string{
		"", "", "<reask>", "", "",
		`[{"id":"call_2","type":"function","function":{"name":"search","arguments":"{\"__arg1\": \"Paris\"}"}}]`,
		"", "Sunny in Paris.", "",
	}
	if got := tp.all(); !slices.Equal(got, want) {
		t.Errorf("streamed chunks =\n%s\nwant\n%s", quoteAll(got), quoteAll(want))
	}
}
