package agent_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestREADMEThreadExample: every code line of the README's thread example
// is a line of ExampleAgent_RunMessages, which runs and checks its output
// (the README's "// res.Output:" comments included).
func TestREADMEThreadExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_runmessages_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### Conversations and threads")
	if !ok {
		t.Fatal("README has no \"### Conversations and threads\" section")
	}
	_, block, _ := strings.Cut(section, "```go\n")
	block, _, _ = strings.Cut(block, "```")
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
				t.Errorf("README's %q is not the example's output", l)
			}
			continue
		}
		checked++
		if !lines[l] {
			t.Errorf("README thread example line %q is not in ExampleAgent_RunMessages", l)
		}
	}
	if checked < 10 || outputs != 2 {
		t.Errorf("checked %d lines and %d outputs of the README's thread example, want the whole block", checked, outputs)
	}
}

// TestREADMEApprovalExample: every code line of the README's approval
// example is a line of ExampleAgent_Resume, which runs and checks its
// output.
func TestREADMEApprovalExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_approval_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### Approval: a person between a call and its tool")
	if !ok {
		t.Fatal("README has no approval section")
	}
	_, block, _ := strings.Cut(section, "```go\n")
	block, _, _ = strings.Cut(block, "```")
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
			t.Errorf("README approval example line %q is not in ExampleAgent_Resume", l)
		}
	}
	if checked < 12 {
		t.Errorf("checked %d lines of the README's approval example, want the whole block", checked)
	}
}
