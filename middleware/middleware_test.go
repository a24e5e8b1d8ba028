package middleware_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// tracer returns a middleware that appends "name>" on the way in and
// "<name" on the way out.
func tracer(name string, log *[]string) middleware.Middleware {
	return middleware.Func(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
			*log = append(*log, name+">")
			resp, err := next(ctx, req)
			*log = append(*log, "<"+name)
			return resp, err
		}
	})
}

func TestChainOrder(t *testing.T) {
	t.Parallel()
	var log []string
	h := middleware.Chain(tracer("a", &log), nil, tracer("b", &log), tracer("c", &log)).WrapModelCall(
		func(context.Context, *middleware.Request) (*llms.ContentResponse, error) {
			log = append(log, "model")
			return &llms.ContentResponse{}, nil
		})
	if _, err := h(context.Background(), &middleware.Request{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a>", "b>", "c>", "model", "<c", "<b", "<a"}
	if !slices.Equal(log, want) {
		t.Errorf("Chain(a, nil, b, c) ran %v, want %v", log, want)
	}
}

func TestChainEmptyIsIdentity(t *testing.T) {
	t.Parallel()
	called := false
	h := middleware.Chain(nil, nil).WrapModelCall(func(context.Context, *middleware.Request) (*llms.ContentResponse, error) {
		called = true
		return &llms.ContentResponse{}, nil
	})
	if _, err := h(context.Background(), &middleware.Request{}); err != nil || !called {
		t.Errorf("Chain(nil, nil) handler: called=%v err=%v, want the inner handler called", called, err)
	}
}

// TestReinvokingMiddlewareRunsInnerOncePerAttempt: a middleware that calls
// next twice makes everything inside it run twice.
func TestReinvokingMiddlewareRunsInnerOncePerAttempt(t *testing.T) {
	t.Parallel()
	twice := middleware.Func(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
			if _, err := next(ctx, req); err != nil {
				return nil, err
			}
			return next(ctx, req)
		}
	})
	var log []string
	m := fakemodel.New(fakemodel.Text("1"), fakemodel.Text("2"))
	w := middleware.Wrap(m, tracer("outer", &log), twice, tracer("inner", &log))
	resp, err := w.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Content; got != "2" {
		t.Errorf("response = %q, want the second attempt's %q", got, "2")
	}
	want := []string{"outer>", "inner>", "<inner", "inner>", "<inner", "<outer"}
	if !slices.Equal(log, want) {
		t.Errorf("trace = %v, want %v", log, want)
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("model calls = %d, want 2", n)
	}
}

func TestRequestToolsIncludesDeprecatedFunctions(t *testing.T) {
	t.Parallel()
	params := map[string]any{"type": "object"}
	req := &middleware.Request{Options: []llms.CallOption{
		llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "search", Parameters: params}}}),
		llms.WithFunctions([]llms.FunctionDefinition{{Name: "calculator", Parameters: params}}),
		llms.WithTemperature(0.5),
		nil,
	}}
	tools := req.Tools()
	var names []string
	for _, tl := range tools {
		if tl.Type != "function" {
			t.Errorf("tool %q has Type %q, want function", tl.Function.Name, tl.Type)
		}
		names = append(names, tl.Function.Name)
	}
	if want := []string{"search", "calculator"}; !slices.Equal(names, want) {
		t.Errorf("Tools() names = %v, want %v", names, want)
	}
	if got := req.CallOptions().Temperature; got != 0.5 {
		t.Errorf("CallOptions().Temperature = %v, want 0.5", got)
	}
}

func TestWrapPassesMessagesAndOptions(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(fakemodel.Text("hello"), fakemodel.Text("again"))
	var seen []*middleware.Request
	spy := middleware.Func(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
			seen = append(seen, req)
			return next(ctx, req)
		}
	})
	w := middleware.Wrap(m, spy)
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}
	resp, err := w.GenerateContent(context.Background(), msgs, llms.WithMaxTokens(7))
	if err != nil || resp.Choices[0].Content != "hello" {
		t.Fatalf("GenerateContent = %v, %v; want hello", resp, err)
	}
	//lint:ignore SA1019 Call is deprecated but part of llms.Model, so Wrap must support it.
	out, err := w.Call(context.Background(), "prompt text")
	if err != nil || out != "again" {
		t.Fatalf("Call = %q, %v; want again", out, err)
	}
	if len(seen) != 2 {
		t.Fatalf("middleware saw %d requests, want 2 (Call goes through the chain too)", len(seen))
	}
	reqs := m.Requests()
	if reqs[0].Options.MaxTokens != 7 {
		t.Errorf("model saw MaxTokens %d, want 7", reqs[0].Options.MaxTokens)
	}
	if got := reqs[1].Messages[0].Parts[0].(llms.TextContent).Text; got != "prompt text" {
		t.Errorf("Call sent %q, want the prompt as a human message", got)
	}
}

func TestWrapNilResponseIsAnError(t *testing.T) {
	t.Parallel()
	w := middleware.Wrap(fakemodel.New(fakemodel.Response(nil)))
	resp, err := w.GenerateContent(context.Background(), nil)
	if err == nil || resp != nil {
		t.Errorf("GenerateContent with a model returning (nil, nil) = %v, %v; want an error", resp, err)
	}
}

func TestWrapPassesModelErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	w := middleware.Wrap(fakemodel.New(fakemodel.Fail(boom)), middleware.ToolArgValidation())
	if _, err := w.GenerateContent(context.Background(), nil); !errors.Is(err, boom) {
		t.Errorf("GenerateContent error = %v, want %v unchanged", err, boom)
	}
}

type reasoner struct{ *fakemodel.Model }

func (reasoner) SupportsReasoning() bool { return true }

func TestWrapForwardsReasoningModel(t *testing.T) {
	t.Parallel()
	w := middleware.Wrap(reasoner{fakemodel.New()}, middleware.ToolArgValidation())
	rm, ok := w.(llms.ReasoningModel)
	if !ok || !rm.SupportsReasoning() {
		t.Errorf("Wrap(reasoning model) does not forward llms.ReasoningModel")
	}
	if _, ok := middleware.Wrap(fakemodel.New()).(llms.ReasoningModel); ok {
		t.Errorf("Wrap(plain model) claims llms.ReasoningModel")
	}
}

// TestCoreImportsStayLight: importing middleware must not pull in
// langchaingo's agents, chains or tools packages, neither middleware nor
// agent may depend on OpenTelemetry, and the engines must not import
// middleware or agent.
func TestCoreImportsStayLight(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	deps := func(pkg string) []string {
		out, err := exec.Command(goBin, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	for _, d := range deps("github.com/toolguard/toolguard/middleware") {
		for _, banned := range []string{"/langchaingo/agents", "/langchaingo/chains", "/langchaingo/tools", "toolguard/agent", "go.starlark.net", "/go-redis/"} {
			if strings.Contains(d, banned) {
				t.Errorf("middleware depends on %s", d)
			}
		}
	}
	// OpenTelemetry is for guard/otelguard alone: the core and the
	// agent reach it only through guard.Observer.
	for _, pkg := range []string{"middleware", "agent"} {
		for _, d := range deps("github.com/toolguard/toolguard/" + pkg) {
			if strings.HasPrefix(d, "go.opentelemetry.io/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
	for _, engine := range []string{"validation", "strip", "errfmt"} {
		for _, d := range deps("github.com/toolguard/toolguard/" + engine) {
			if strings.HasPrefix(d, "github.com/toolguard/toolguard/middleware") || strings.HasPrefix(d, "github.com/toolguard/toolguard/agent") {
				t.Errorf("engine %s imports %s", engine, d)
			}
		}
	}
}
