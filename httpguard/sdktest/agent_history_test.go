package sdktest

import (
	"context"
	"net/http"
	"testing"

	"github.com/tmc/langchaingo/llms"
	lcanthropic "github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/googleai"
	lcopenai "github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"github.com/toolguard/toolguard/toolstage"
	"google.golang.org/api/option"
)

// The transcripts toolguard's agent builds never need HistoryCheck: an
// agent driving langchaingo's openai, anthropic and googleai clients
// through httpguard with HistoryCheck(RefuseHistory), over turns with a
// parallel batch, an unknown tool, a tool error and a follow-up run on the
// transcript, sends every request as it built it: none refused (a 422
// would fail the run), no history_repaired event.
func TestAgentTranscriptsNeedNoHistoryRepair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clients := map[string]func(t *testing.T, srv *fp.Server, hc *http.Client) llms.Model{
		"openai": func(t *testing.T, srv *fp.Server, hc *http.Client) llms.Model {
			m, err := lcopenai.New(lcopenai.WithBaseURL(srv.URL+"/v1"), lcopenai.WithToken("sk-test"), lcopenai.WithModel("gpt-4o"), lcopenai.WithHTTPClient(hc))
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		"anthropic": func(t *testing.T, srv *fp.Server, hc *http.Client) llms.Model {
			m, err := lcanthropic.New(lcanthropic.WithBaseURL(srv.URL+"/v1"), lcanthropic.WithToken("sk-ant-test"),
				lcanthropic.WithModel("claude-sonnet-4-5"), lcanthropic.WithHTTPClient(hc))
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		"googleai": func(t *testing.T, srv *fp.Server, hc *http.Client) llms.Model {
			m, err := googleai.New(ctx, googleai.WithAPIKey("g-test"), googleai.WithRest(), googleai.WithDefaultModel("gemini-2.5-flash"),
				googleai.WithHTTPClient(hc), func(o *googleai.Options) { o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL)) })
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			return m
		},
	}
	for name, newModel := range clients {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(
				fp.Reply(fp.Text("Checking."), fp.Call("get_weather", `{"city": "Paris"}`), fp.Call("get_weather", `{"city": "Rome"}`)),
				fp.Reply(fp.Call("get_forecast", `{"city": "Paris"}`), fp.Call("get_weather", `{"city": "Oslo"}`)),
				fp.Reply(fp.Text("Sunny in Paris and Rome; Oslo is unknown.")),
				fp.Reply(fp.Call("get_weather", `{"city": "Lyon"}`)),
				fp.Reply(fp.Text("Sunny in Lyon too.")),
			)
			defer srv.Close()
			var repaired int
			events := func(_ context.Context, e guard.Event) {
				if e.Kind == guard.EventHistoryRepaired {
					repaired++
				}
			}
			hc := &http.Client{Transport: httpguard.New(nil, httpguard.HistoryCheck(httpguard.RefuseHistory), httpguard.ToolArgValidation())}
			weather := toolstage.NewSchemaTool("get_weather", "The weather of a city.", weatherParams(), func(_ context.Context, args map[string]any) (string, error) {
				if args["city"] == "Oslo" {
					return "", errOslo
				}
				return "sunny", nil
			})
			a := agent.New(newModel(t, srv, hc), toolstage.New([]toolstage.Tool{weather}, toolstage.WithEventHandler(events)))
			res, err := a.Run(ctx, "Weather in Paris, Rome and Oslo?")
			if err != nil {
				t.Fatalf("Run() = %v (a refused history is a 422)", err)
			}
			res, err = a.RunMessages(ctx, append(res.Messages, llms.TextParts(llms.ChatMessageTypeHuman, "And Lyon?")))
			if err != nil {
				t.Fatalf("RunMessages() on the transcript = %v (a refused history is a 422)", err)
			}
			if got := len(srv.Requests()); got != 5 {
				t.Errorf("the provider got %d requests, want 5: every turn sent once", got)
			}
			if repaired != 0 {
				t.Errorf("history events: %d repaired, want none", repaired)
			}
			t.Logf("%s: %d requests, %d steps, answer %q, 0 history events", name, len(srv.Requests()), len(res.Steps), res.Output)
		})
	}
}

// errOslo is a tool error the model reads.
var errOslo = errString("no weather station in Oslo")

type errString string

func (e errString) Error() string { return string(e) }
