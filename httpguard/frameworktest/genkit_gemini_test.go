package frameworktest

import (
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/firebase/genkit/go/plugins/googlegenai"
	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// Genkit's Gemini plugin (googlegenai.GoogleAI) builds its genai client
// with an *http.Client of its own and takes none, so httpguard cannot be
// handed to it in-process. It can stand in front of it: genai reads its
// base URL from GOOGLE_GEMINI_BASE_URL, pointed here at a reverse proxy
// whose transport is httpguard (what cmd/toolguard-proxy is). The plugin
// declares the tool in the OpenAPI subset (parameters, upper-case types),
// which the guard converts: the bad call is re-asked, Genkit runs the tool
// once with the corrected call and answers, sync and streamed.
func TestGuardedGenkitGeminiPluginThroughAProxy(t *testing.T) {
	for _, stream := range []bool{false, true} {
		srv := fp.New(agentScript()...)
		defer srv.Close()
		upstream, err := url.Parse(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		var events []guard.Event
		proxy := httptest.NewServer(&httputil.ReverseProxy{
			Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(upstream) },
			Transport: guardedClient(&events).Transport,
		})
		defer proxy.Close()
		t.Setenv("GOOGLE_GEMINI_BASE_URL", proxy.URL)

		plugin := &googlegenai.GoogleAI{APIKey: "g-test"}
		g := genkit.Init(context.Background(), genkit.WithPlugins(plugin))
		m, err := plugin.DefineModel(g, "gemini-2.5-flash", nil)
		if err != nil {
			t.Fatal(err)
		}
		runs := &toolRuns{}
		weather := genkit.DefineTool(g, "get_weather", "The weather in a city", func(_ *ai.ToolContext, in weatherArgs) (string, error) {
			return runs.run(in), nil
		})
		opts := []ai.GenerateOption{ai.WithModel(m), ai.WithPrompt("Weather in Paris for 3 days?"), ai.WithTools(weather)}
		if stream {
			opts = append(opts, ai.WithStreaming(func(context.Context, *ai.ModelResponseChunk) error { return nil }))
		}
		resp, err := genkit.Generate(context.Background(), g, opts...)
		if err != nil {
			t.Fatalf("stream %v: Generate: %v", stream, err)
		}
		if b := string(srv.Requests()[0].Body); !strings.Contains(b, `"parameters":{`) || !strings.Contains(b, `"type":"OBJECT"`) {
			t.Errorf("the plugin did not declare the tool in the OpenAPI subset: %s", b)
		}
		checkAgentRun(t, srv, stream, runs, events, resp.Text())
	}
}
