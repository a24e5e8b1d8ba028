package main

import (
	"context"
	"strings"
	"testing"
)

// TestCustomMiddleware pins the order rule the example shows: the inner
// logger sees every model call, the outer one each agent turn, and
// LogEvents reports the re-ask in between.
func TestCustomMiddleware(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, scriptedModel()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	want := []string{
		`msg="model call" layer=model messages=2 `,
		`msg="toolguard: invalid" event.kind=invalid event.middleware=ToolArgValidation`,
		`msg="toolguard: reask"`,
		`msg="model call" layer=model messages=4 `,
		`msg="model call" layer=turn messages=2 `,
		`msg="tool get_order" order_id=A-1234`,
		`msg="model call" layer=model messages=4 `,
		`msg="model call" layer=turn messages=4 `,
		"assistant: Order A-1234 shipped on 2 May.",
		"3 model calls, 1 tool call(s)",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q (in order):\n%s", w, got)
		}
		at += i + len(w)
	}
	if n, m := strings.Count(got, "layer=model"), strings.Count(got, "layer=turn"); n != 3 || m != 2 {
		t.Errorf("logged %d model calls and %d turns, want 3 and 2:\n%s", n, m, got)
	}
}
