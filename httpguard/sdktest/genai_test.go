package sdktest

import (
	"context"
	"net/http"
	"testing"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"google.golang.org/genai"
)

func genaiClient(t *testing.T, srv *fp.Server, hc *http.Client) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "g-test", Backend: genai.BackendGeminiAPI, HTTPClient: hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func genaiConfig() *genai.GenerateContentConfig {
	return &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "get_weather", ParametersJsonSchema: weatherParams(),
	}}}}}
}

// The fake speaks Gemini as genai reads it: thoughts with signatures, text,
// FunctionCalls() without ids, sync and streamed through the iterator.
func TestGenaiReadsFake(t *testing.T) {
	t.Parallel()
	reply := fp.Reply(fp.Thinking("think", "c2ln"), fp.Text("Let me check."), fp.Call("get_weather", `{"city": "Paris"}`).WithSignature("dHMx")).WithUsage(11, 7)
	srv := fp.New(reply, reply)
	defer srv.Close()
	client := genaiClient(t, srv, nil)
	ctx := context.Background()

	resp, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("Weather in Paris?"), genaiConfig())
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.FunctionCalls()
	if len(calls) != 1 || calls[0].ID != "" || calls[0].Name != "get_weather" || calls[0].Args["city"] != "Paris" {
		t.Errorf("sync FunctionCalls() = %+v", calls)
	}
	if resp.Text() != "Let me check." {
		t.Errorf("sync Text() = %q", resp.Text())
	}
	parts := resp.Candidates[0].Content.Parts
	if !parts[0].Thought || string(parts[0].ThoughtSignature) != "sig" || string(parts[2].ThoughtSignature) != "ts1" {
		t.Errorf("sync parts = %+v %+v", parts[0], parts[2])
	}
	if u := resp.UsageMetadata; u.PromptTokenCount != 11 || u.CandidatesTokenCount != 7 {
		t.Errorf("sync usage %+v", u)
	}

	var text string
	var streamed []*genai.FunctionCall
	var last *genai.GenerateContentResponse
	for r, err := range client.Models.GenerateContentStream(ctx, "gemini-2.5-flash", genai.Text("Weather in Paris?"), genaiConfig()) {
		if err != nil {
			t.Fatal(err)
		}
		text += r.Text()
		streamed = append(streamed, r.FunctionCalls()...)
		last = r
	}
	if text != "Let me check." || len(streamed) != 1 || streamed[0].Args["city"] != "Paris" {
		t.Errorf("stream: text %q, calls %+v", text, streamed)
	}
	if last.Candidates[0].FinishReason != genai.FinishReasonStop || last.UsageMetadata.CandidatesTokenCount != 7 {
		t.Errorf("stream: last chunk %+v", last)
	}
	if r := srv.Requests(); r[1].Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || r[1].RawQuery != "alt=sse" {
		t.Errorf("stream request %s?%s", r[1].Path, r[1].RawQuery)
	}
}
