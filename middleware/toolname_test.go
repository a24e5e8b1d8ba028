package middleware_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/chains"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// TestToolNameMatchesAsTheExecutor: langchaingo's Executor runs a call of
// "SEARCH" or "Search" with the tool "search"; WithToolName("search")
// counts those calls too, in the response and in the transcript, so a
// model cannot pass the limit by changing case.
func TestToolNameMatchesAsTheExecutor(t *testing.T) {
	t.Parallel()
	call := func(name, q string) fakemodel.Step {
		return fakemodel.ToolCalls(fakemodel.Call(name, `{"__arg1": "`+q+`"}`))
	}
	m := fakemodel.New(call("Search", "a"), call("SEARCH", "b"), call("search", "c"))
	search := &execTool{name: "search"}
	ex := newExecutor(m, search, middleware.ToolCallLimit(guard.WithToolName("search"), guard.WithRunLimit(2),
		guard.WithExitBehavior(guard.ExitEnd)))
	out, err := chains.Run(context.Background(), ex, "find a, b and c")
	const want = "Tool call limit reached: 'search' run limit exceeded (2/2 calls)."
	if err != nil || out != want {
		t.Fatalf("Executor answered %q, %v; want %q, nil", out, err, want)
	}
	if got, want := search.calls(), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("search ran with %q, want %q (Search and SEARCH run it)", got, want)
	}

	// The Executor upper-cases both names: "fınd" (dotless ı) runs "find",
	// although strings.EqualFold tells them apart.
	m = fakemodel.New(call("fınd", "a"), call("fınd", "b"), call("find", "c"))
	find := &execTool{name: "find"}
	ex = newExecutor(m, find, middleware.ToolCallLimit(guard.WithToolName("find"), guard.WithRunLimit(2),
		guard.WithExitBehavior(guard.ExitEnd)))
	out, err = chains.Run(context.Background(), ex, "find a, b and c")
	if want := "Tool call limit reached: 'find' run limit exceeded (2/2 calls)."; err != nil || out != want {
		t.Fatalf("Executor answered %q, %v; want %q, nil", out, err, want)
	}
	if got, want := find.calls(), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("find ran with %q, want %q", got, want)
	}
}
