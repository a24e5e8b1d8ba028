package frameworktest

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/firebase/genkit/go/plugins/compat_oai"
	oaiv1option "github.com/openai/openai-go/option"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// genkitSetup is Genkit with its OpenAI-compatible plugin pointed at srv
// through hc (openai-go v1's option.WithHTTPClient in the plugin's Opts),
// a model "fake/gpt-4o" and a get_weather tool that records its runs;
// opts are more options for the plugin's client.
func genkitSetup(t *testing.T, srv *fp.Server, hc *http.Client, runs *toolRuns, opts ...oaiv1option.RequestOption) (*genkit.Genkit, ai.Model, ai.Tool) {
	t.Helper()
	ctx := context.Background()
	if hc != nil {
		opts = append(opts, oaiv1option.WithHTTPClient(hc))
	}
	plugin := &compat_oai.OpenAICompatible{Provider: "fake", APIKey: "sk-test", BaseURL: srv.URL + "/v1", Opts: opts}
	g := genkit.Init(ctx, genkit.WithPlugins(plugin))
	m := plugin.DefineModel("fake", "gpt-4o", ai.ModelOptions{Supports: &compat_oai.BasicText})
	weather := genkit.DefineTool(g, "get_weather", "The weather in a city", func(_ *ai.ToolContext, in weatherArgs) (string, error) {
		return runs.run(in), nil
	})
	return g, m, weather
}

// Genkit's Generate with a tool, on its OpenAI-compatible plugin given
// httpguard's client: the model's bad call is re-asked inside the model's
// call, Genkit runs the tool once with the corrected, coerced arguments
// and answers. Sync and streamed (ai.WithStreaming: the chunks never carry
// the rejected call). Without the guard, the same script ends the call:
// Genkit checks the tool's input against its schema and fails.
func TestGuardedGenkitGenerate(t *testing.T) {
	t.Parallel()
	{
		srv := fp.New(agentScript()...)
		defer srv.Close()
		runs := &toolRuns{}
		g, m, weather := genkitSetup(t, srv, nil, runs)
		_, err := genkit.Generate(context.Background(), g, ai.WithModel(m), ai.WithPrompt("Weather in Paris for 3 days?"), ai.WithTools(weather))
		if err == nil || !strings.Contains(err.Error(), "did not match expected schema") || len(runs.all()) != 0 {
			t.Errorf("unguarded: err %v, tool runs %+v; want the call to fail on the bad call", err, runs.all())
		}
	}
	for _, stream := range []bool{false, true} {
		srv := fp.New(agentScript()...)
		defer srv.Close()
		var events []guard.Event
		runs := &toolRuns{}
		g, m, weather := genkitSetup(t, srv, guardedClient(&events), runs)
		opts := []ai.GenerateOption{ai.WithModel(m), ai.WithPrompt("Weather in Paris for 3 days?"), ai.WithTools(weather)}
		var chunks strings.Builder
		if stream {
			opts = append(opts, ai.WithStreaming(func(_ context.Context, c *ai.ModelResponseChunk) error {
				for _, p := range c.Content {
					chunks.WriteString(p.Text)
					if p.ToolRequest != nil {
						chunks.WriteString(mustJSON(p.ToolRequest.Input))
					}
				}
				return nil
			}))
		}
		resp, err := genkit.Generate(context.Background(), g, opts...)
		if err != nil {
			t.Fatalf("stream %v: Generate: %v", stream, err)
		}
		checkAgentRun(t, srv, stream, runs, events, resp.Text())
		if stream {
			if s := chunks.String(); strings.Contains(s, "42") || !strings.Contains(s, "It is sunny in Paris.") {
				t.Errorf("the streamed chunks: %s", s)
			}
		}
	}
}
