package frameworktest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/schema"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	oaiv1 "github.com/openai/openai-go"
	oaiv1option "github.com/openai/openai-go/option"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// frameworkCall is one framework making one model call through hc to
// srv, with its defaults (opts: extra openai-go v1 options for Genkit's
// plugin).
type frameworkCall struct {
	name string
	call func(t *testing.T, srv *fp.Server, hc *http.Client, runs *toolRuns) error
}

func frameworkCalls() []frameworkCall {
	ctx := context.Background()
	genkitCall := func(opts ...oaiv1option.RequestOption) func(t *testing.T, srv *fp.Server, hc *http.Client, runs *toolRuns) error {
		return func(t *testing.T, srv *fp.Server, hc *http.Client, runs *toolRuns) error {
			g, m, weather := genkitSetup(t, srv, hc, runs, opts...)
			_, err := genkit.Generate(ctx, g, ai.WithModel(m), ai.WithPrompt("Weather in Paris?"), ai.WithTools(weather))
			return err
		}
	}
	return []frameworkCall{
		{"eino react agent", func(t *testing.T, srv *fp.Server, hc *http.Client, runs *toolRuns) error {
			_, err := einoAgent(t, srv, hc, runs).Generate(ctx, []*schema.Message{schema.UserMessage("Weather in Paris?")})
			return err
		}},
		{"genkit compat_oai", genkitCall()},
		{"genkit compat_oai WithMaxRetries(0)", genkitCall(oaiv1option.WithMaxRetries(0))},
	}
}

// The frameworks' own retries, measured against a provider that keeps
// answering 429 (retry-after-ms 1), without the guard: Eino's OpenAI model
// (on a fork of go-openai) sends 1 request, no retry; Genkit's
// OpenAI-compatible plugin (openai-go v1) 3, openai-go's default 2
// retries, and 1 with option.WithMaxRetries(0) in the plugin's Opts, the
// set-up to use beside ModelRetry. Each returns the 429 as an error.
func TestFrameworkRetryDefaults(t *testing.T) {
	t.Parallel()
	want := map[string]int{"eino react agent": 1, "genkit compat_oai": 3, "genkit compat_oai WithMaxRetries(0)": 1}
	for _, fc := range frameworkCalls() {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			e := fp.Error(http.StatusTooManyRequests, "retry-after-ms", "1", "Retry-After", "0")
			srv := fp.New(e, e, e, e)
			defer srv.Close()
			err := fc.call(t, srv, &http.Client{}, &toolRuns{})
			if err == nil || !strings.Contains(err.Error(), "429") {
				t.Errorf("err %v, want the 429", err)
			}
			n := len(srv.Requests())
			if n != want[fc.name] {
				t.Errorf("%d requests for one call, want %d", n, want[fc.name])
			}
			t.Logf("%s: %d requests to a provider answering 429", fc.name, n)
		})
	}
}

// Failing closed reaches each framework as an error from its model call:
// the guard's 422 (type invalid_tool_calls, x-should-retry: false), which
// the framework sends once — no retry of its own, though Genkit's
// openai-go retries a 429 — and the tool never runs. Eino's error wraps
// its OpenAI model's *APIError, Genkit's openai-go v1's *Error.
func TestFrameworkFailClosed(t *testing.T) {
	t.Parallel()
	for _, fc := range frameworkCalls()[:2] {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			bad := fp.Reply(fp.Call("get_weather", `{"city": 42}`))
			srv := fp.New(bad, bad, bad, bad, bad, bad)
			defer srv.Close()
			sent := &counting{base: httpguard.New(nil, httpguard.ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed()))}
			runs := &toolRuns{}
			err := fc.call(t, srv, &http.Client{Transport: sent}, runs)
			if err == nil {
				t.Fatal("the call succeeded, want the refusal")
			}
			var status int
			var typ string
			var ee *einoopenai.APIError
			var oe *oaiv1.Error
			switch {
			case errors.As(err, &ee):
				status, typ = ee.HTTPStatusCode, ee.Type
			case errors.As(err, &oe):
				status, typ = oe.StatusCode, oe.Type
			}
			if status != 422 || typ != "invalid_tool_calls" || !strings.Contains(err.Error(), "/city") {
				t.Errorf("err %T %v: status %d, type %q; want 422 invalid_tool_calls naming /city", err, err, status, typ)
			}
			if n := sent.n.Load(); n != 1 {
				t.Errorf("the framework sent %d requests, want 1 (no retry of the 422)", n)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("the provider got %d requests, want 2 (the call and one re-ask)", n)
			}
			if r := runs.all(); len(r) != 0 {
				t.Errorf("the tool ran with %+v", r)
			}
			t.Logf("%s: %T: %.160s", fc.name, err, err)
		})
	}
}
