package sdktest

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// testedWith returns the modules and versions that the "Tested with"
// section of httpguard's package documentation names.
func testedWith(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile("../doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "// # Tested with\n")
	if !ok {
		t.Fatal(`httpguard's doc.go has no "# Tested with" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n// # ")
	out := map[string][]string{}
	for _, m := range regexp.MustCompile(`((?:github\.com|google\.golang\.org)/[A-Za-z0-9._/-]+) (v[0-9][^\s,;)]*)`).FindAllStringSubmatch(sec, -1) {
		out[m[1]] = append(out[m[1]], m[2])
	}
	return out
}

// required returns the modules and versions this module's go.mod
// requires, directly or not: the versions its tests build with.
func required(t *testing.T) map[string]string {
	t.Helper()
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(?:require )?\t?(\S+) (v\S+)`).FindAllStringSubmatch(string(mod), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// The versions httpguard's documentation says each client was tested
// with are the ones this module's go.mod requires.
func TestDocTestedWithVersions(t *testing.T) {
	t.Parallel()
	named := testedWith(t)
	ran := required(t)
	for _, m := range []string{
		"github.com/openai/openai-go/v3", "github.com/anthropics/anthropic-sdk-go/v2", "google.golang.org/genai",
		"github.com/sashabaranov/go-openai", "github.com/tmc/langchaingo", "github.com/ollama/ollama",
		"github.com/aws/aws-sdk-go-v2/service/bedrockruntime",
	} {
		if ran[m] == "" {
			t.Errorf("go.mod does not require %s", m)
		}
		if len(named[m]) == 0 {
			t.Errorf("the documentation does not name %s (tested here at %s)", m, ran[m])
		}
		for _, v := range named[m] {
			if v != ran[m] {
				t.Errorf("the documentation names %s %s, the tests run %s", m, v, ran[m])
			}
		}
	}
}
