package agent_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// docBlock returns the first code block of the package doc's section
// heading (doc.go, "# heading"), its lines as they read in the doc.
func docBlock(t *testing.T, heading string) string {
	t.Helper()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "// # "+heading+"\n")
	if !ok {
		t.Fatalf("the package doc has no %q section", heading)
	}
	var block []string
	for _, l := range strings.Split(section, "\n") {
		code, isCode := strings.CutPrefix(l, "//\t")
		switch {
		case isCode:
			block = append(block, code)
		case len(block) > 0 && l == "//":
			block = append(block, "")
		case len(block) > 0:
			return strings.Join(block, "\n")
		case strings.HasPrefix(l, "// # "):
			t.Fatalf("the package doc's %q section has no code block", heading)
		}
	}
	return strings.Join(block, "\n")
}

// TestDocThreadExample: every code line of the package doc's thread
// example is a line of ExampleAgent_RunMessages, which runs and checks its
// output (the doc's "// res.Output:" comments included).
func TestDocThreadExample(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile("example_runmessages_test.go")
	if err != nil {
		t.Fatal(err)
	}
	block := docBlock(t, "Conversations and threads")
	lines := map[string]bool{}
	for _, l := range strings.Split(string(example), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	checked, outputs := 0, 0
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if out, isOutput := strings.CutPrefix(l, "// res.Output: "); isOutput {
			outputs++
			if want := fmt.Sprintf("// turn %d: %s", outputs, strings.Trim(out, `"`)); !strings.Contains(string(example), want) {
				t.Errorf("the doc's %q is not the example's output", l)
			}
			continue
		}
		checked++
		if !lines[l] {
			t.Errorf("the doc's thread example line %q is not in ExampleAgent_RunMessages", l)
		}
	}
	if checked < 10 || outputs != 2 {
		t.Errorf("checked %d lines and %d outputs of the doc's thread example, want the whole block", checked, outputs)
	}
}

// TestDocApprovalExample: every code line of the package doc's approval
// example is a line of ExampleAgent_Resume, which runs and checks its
// output.
func TestDocApprovalExample(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile("example_approval_test.go")
	if err != nil {
		t.Fatal(err)
	}
	block := docBlock(t, "Approval")
	lines := map[string]bool{}
	for _, l := range strings.Split(string(example), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	checked := 0
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		checked++
		if !lines[l] {
			t.Errorf("the doc's approval example line %q is not in ExampleAgent_Resume", l)
		}
	}
	if checked < 12 {
		t.Errorf("checked %d lines of the doc's approval example, want the whole block", checked)
	}
}
