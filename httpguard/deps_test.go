package httpguard_test

import (
	"os/exec"
	"strings"
	"testing"
)

// sdkModules are the LLM client modules httpguard guards and never
// imports: it speaks their wire protocols.
var sdkModules = []string{
	"github.com/openai/openai-go",
	"github.com/anthropics/anthropic-sdk-go",
	"google.golang.org/genai",
	"github.com/sashabaranov/go-openai",
	"github.com/tmc/langchaingo",
	"github.com/google/generative-ai-go",
	"github.com/cloudwego/eino",
	"github.com/firebase/genkit",
	"google.golang.org/adk",
}

// TestNoSDKInTheTransport: httpguard and its fake provider compile no SDK
// (go list -deps ./httpguard ./httpguard/fakeprovider); the SDKs are the
// nested test module's (httpguard/sdktest).
func TestNoSDKInTheTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".", "./fakeprovider").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), out)
	}
	for _, dep := range deps {
		for _, sdk := range sdkModules {
			if strings.HasPrefix(dep, sdk) {
				t.Errorf("httpguard compiles %s", dep)
			}
		}
	}
}
