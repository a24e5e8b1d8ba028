// Command gemini shows httpguard guarding Google's Gen AI Go SDK
// (google.golang.org/genai, which ADK-Go and Genkit's Gemini plugin use)
// at the wire: the model's first tool call is bad, httpguard catches it
// inside the SDK's call, feeds the violation back to the model as a
// functionResponse with {"error": …}, replaying the rejected turn with its
// thought signatures, and hands the program the corrected call, read
// through the SDK's FunctionCalls(); then the tool runs and the model
// answers.
//
// The tool is declared the Gemini way, with genai's OpenAPI-subset Schema
// (upper-case types, nullable): httpguard validates the call against the
// JSON Schema that means the same.
//
// It runs offline, always: the "provider" is httpguard/fakeprovider on a
// loopback port, scripted to make the mistake real models make (a number
// where a string belongs, a number sent as a string). Nothing but the
// *http.Client given to the SDK differs from a program that calls Gemini:
// drop HTTPOptions.BaseURL and set GEMINI_API_KEY to run it for real.
//
//	cd examples/gemini && go run .
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"google.golang.org/genai"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	// The provider's script: a bad call (thought and call signed, as
	// Gemini's thinking models sign them), the corrected one (days still
	// a string, which the guard coerces without asking again), the answer.
	provider := fp.New(
		fp.Reply(fp.Thinking("The user wants a 3-day forecast for Paris.", "c2lnLXRob3VnaHQ="),
			fp.Text("Let me check the forecast."),
			fp.Call("get_weather", `{"city": 75001, "days": "3"}`).WithSignature("c2lnLWJhZC1jYWxs")),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris", "days": "3"}`).WithSignature("c2lnLWdvb2QtY2FsbA==")),
		fp.Reply(fp.Text("Sunny in Paris for the next 3 days, 24°C.")),
	)
	defer provider.Close()

	// The guard: the SDK's client gets an *http.Client whose transport is
	// httpguard's. genai retries only when HTTPOptions.RetryOptions asks
	// it to, so ModelRetry is the one retry policy.
	events := guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		switch e.Kind {
		case guard.EventInvalid:
			fmt.Printf("  [toolguard] %s: %v\n", e.Kind, e.Err)
		case guard.EventReask, guard.EventRepaired:
			fmt.Printf("  [toolguard] %s %v\n", e.Kind, e.Paths)
		}
	})
	guarded := &http.Client{Transport: httpguard.New(nil, httpguard.ToolArgValidation(events), httpguard.ModelRetry(events))}
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey: "offline", Backend: genai.BackendGeminiAPI, HTTPClient: guarded,
		HTTPOptions: genai.HTTPOptions{BaseURL: provider.URL},
	})
	if err != nil {
		return err
	}

	config := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name:        "get_weather",
		Description: "The weather forecast for a city.",
		Parameters: &genai.Schema{
			Type: genai.TypeObject,
			Properties: map[string]*genai.Schema{
				"city": {Type: genai.TypeString},
				"days": {Type: genai.TypeInteger},
				"unit": {Type: genai.TypeString, Enum: []string{"C", "F"}, Nullable: genai.Ptr(true)},
			},
			Required: []string{"city"},
		},
	}}}}}
	question := "What's the weather in Paris for the next 3 days?"
	contents := genai.Text(question)
	fmt.Println("user:", question)
	for {
		resp, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, config)
		if err != nil {
			return err
		}
		calls := resp.FunctionCalls()
		if len(calls) == 0 {
			fmt.Println("model:", resp.Text())
			break
		}
		// The model's turn goes back as it came: its parts carry the
		// thought signatures Gemini asks to have replayed.
		turn := resp.Candidates[0].Content
		contents = append(contents, turn)
		var answers []*genai.Part
		for _, c := range calls {
			args, _ := json.Marshal(c.Args)
			fmt.Printf("the program reads FunctionCalls(): %s(%s), id %q\n", c.Name, args, c.ID)
			out, err := getWeather(args)
			if err != nil {
				return err
			}
			answers = append(answers, genai.NewPartFromFunctionResponse(c.Name, map[string]any{"output": out}))
		}
		for _, p := range turn.Parts {
			if p.FunctionCall != nil {
				fmt.Printf("its thought signature, to replay: %q\n", p.ThoughtSignature)
			}
		}
		contents = append(contents, genai.NewContentFromParts(answers, genai.RoleUser))
	}

	reqs := provider.Requests()
	if len(reqs) != 3 {
		return fmt.Errorf("the provider received %d requests, want 3", len(reqs))
	}
	fmt.Printf("the provider received %d requests; the second is the re-ask, which the program never saw:\n  %s\n", len(reqs), reqs[1].Body)
	return nil
}

// getWeather is the tool: it decodes its arguments into Go types, as a
// real tool does, and so fails on a call the guard let through bad.
func getWeather(args []byte) (string, error) {
	var in struct {
		City string  `json:"city"`
		Days int     `json:"days"`
		Unit *string `json:"unit"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return "", fmt.Errorf("get_weather: %w", err)
	}
	return fmt.Sprintf("sunny in %s for %d days, 24°C", in.City, in.Days), nil
}
