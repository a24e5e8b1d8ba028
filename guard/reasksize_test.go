package guard_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
)

// reaskBytes is the size of what a request's messages carry: texts, tool
// calls' arguments and tool messages.
func reaskBytes(msgs []msg) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Text)
		for _, c := range m.Calls {
			n += len(c.Args)
		}
	}
	return n
}

// maxReplayedArguments is guard's bound on the arguments a re-ask shows
// again (64 KiB), pinned.
const maxReplayedArguments = 64 << 10

// oversized is what the model reads of a call whose arguments, size bytes,
// are too large to replay.
func oversized(size int) string {
	return "the arguments are " + strconv.Itoa(size) + " bytes, more than the " +
		strconv.Itoa(maxReplayedArguments) + " a re-ask shows again, so they are shown as {}; send them again in full"
}

// TestOversizedArgumentsAreNotReplayed: a re-ask shows arguments larger
// than maxReplayedArguments as {}, as it shows broken JSON, and the
// tool messages say how large they were and the limit, so the re-ask's size
// does not grow with what the model sent. Both the rejected call and its
// valid sibling are shown as {}.
func TestOversizedArgumentsAreNotReplayed(t *testing.T) {
	t.Parallel()
	const size = 4 << 20
	note := strings.Repeat("a", size)
	invalid := `{"city": 1, "note": "` + note + `"}`
	valid := `{"query": "` + note + `"}`
	m := newScript(
		callsStep(call("get_weather", invalid), call("search", valid)),
		callsStep(call("get_weather", `{"city": "Paris"}`), call("search", `{"query": "x"}`)),
	)
	if _, err := run(m, question(weatherTool, searchTool), toolArgValidation()); err != nil {
		t.Fatal(err)
	}
	reask := m.requests()[1].Msgs
	if n, limit := reaskBytes(reask), 2*errfmt.DefaultMaxBytes+reaskBytes(question().Msgs); n > limit {
		t.Errorf("re-ask carries %d bytes for %d bytes of arguments, want at most %d", n, len(invalid)+len(valid), limit)
	}
	extra := reask[len(question().Msgs):]
	for i, want := range []struct{ args, answer string }{
		{"{}", "- (root): " + oversized(len(invalid)) + "\n"},
		{"{}", notExecuted + " Note: " + oversized(len(valid)) + "."},
	} {
		replayed := string(extra[0].Calls[i].Args)
		answer := extra[1+i].Text
		if replayed != want.args || !strings.Contains(answer, want.answer) {
			t.Errorf("call %d replayed as %s answered %q; want %s answered with %q", i, replayed, answer, want.args, want.answer)
		}
	}
	if !strings.Contains(oversized(len(invalid)), strconv.Itoa(len(invalid))+" bytes, more than the "+strconv.Itoa(maxReplayedArguments)) {
		t.Errorf("Oversized(%d) = %q, want the size and the limit", len(invalid), oversized(len(invalid)))
	}
}

// TestOversizedArgumentsInLimitReask: ToolCallLimit's ExitContinue re-ask
// bounds oversized arguments the same way.
func TestOversizedArgumentsInLimitReask(t *testing.T) {
	t.Parallel()
	big := `{"query": "` + strings.Repeat("a", 1<<20) + `"}`
	m := newScript(
		callsStep(call("search", big), call("search", big)),
		callsStep(call("search", `{"query": "x"}`)),
	)
	if _, err := run(m, question(searchTool), toolCallLimit(guard.WithRunLimit(1))); err != nil {
		t.Fatal(err)
	}
	reask := m.requests()[1].Msgs
	if n := reaskBytes(reask); n > 4*errfmt.DefaultMaxBytes {
		t.Errorf("limit re-ask carries %d bytes, want it bounded", n)
	}
	for _, m := range reask[len(question().Msgs):] {
		if m.Role == roleTool && !strings.Contains(m.Text, oversized(len(big))) {
			t.Errorf("tool message %q does not say the arguments are shown as {}", m.Text)
		}
		for _, c := range m.Calls {
			if string(c.Args) != "{}" {
				t.Errorf("replayed arguments of %d bytes, want {}", len(c.Args))
			}
		}
	}
}
