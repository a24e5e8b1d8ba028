package otelguard_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard/otelguard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// mistralUsage has the JSON form of mistral-go's UsageInfo, which
// langchaingo's mistral provider puts under GenerationInfo["usage"].
type mistralUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
}

// TestTokenUsageByProvider: the GenerationInfo each langchaingo v0.1.14
// provider sets (as listed in the package doc) gives the chat span's
// gen_ai.usage.* attributes and gen_ai.client.token.usage points.
func TestTokenUsageByProvider(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider  string
		choices   []map[string]any
		in, out   string // "" when not reported
		wantPoint bool
	}{
		{"openai", []map[string]any{{"PromptTokens": 11, "CompletionTokens": 7, "TotalTokens": 18, "ReasoningTokens": 0}}, "11", "7", true},
		{"anthropic (one choice per block)", []map[string]any{
			{"InputTokens": 12, "OutputTokens": 8, "CacheReadInputTokens": 0},
			{"InputTokens": 12, "OutputTokens": 8, "CacheReadInputTokens": 0},
		}, "12", "8", true},
		{"googleai", []map[string]any{{"input_tokens": int32(13), "output_tokens": int32(9), "PromptTokens": int32(13), "CompletionTokens": int32(9)}}, "13", "9", true},
		{"ollama", []map[string]any{{"PromptTokens": 14, "CompletionTokens": 10, "ThinkingTokens": 0}}, "14", "10", true},
		{"mistral", []map[string]any{{"created": 1, "model": "m", "usage": mistralUsage{PromptTokens: 15, TotalTokens: 26, CompletionTokens: 11}}}, "15", "11", true},
		{"bedrock", []map[string]any{{"input_tokens": 16, "output_tokens": 12}}, "16", "12", true},
		{"bedrock streamed (json numbers)", []map[string]any{{"input_tokens": json.Number("17"), "output_tokens": float64(13)}}, "17", "13", true},
		{"bedrock cohere", []map[string]any{{"generation_id": "g", "index": 0}}, "", "", false},
		{"no generation info", []map[string]any{nil}, "", "", false},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			tel := newTelemetry(t)
			resp := &llms.ContentResponse{}
			for _, info := range tc.choices {
				resp.Choices = append(resp.Choices, &llms.ContentChoice{Content: "hi", StopReason: "stop", GenerationInfo: info})
			}
			llm := middleware.Wrap(fakemodel.New(fakemodel.Response(resp)), tel.middleware())
			if _, err := llm.GenerateContent(context.Background(), human("hello")); err != nil {
				t.Fatal(err)
			}
			chat := tel.ended("chat")[0]
			if got := attr(chat.Attributes(), "gen_ai.usage.input_tokens"); got != tc.in {
				t.Errorf("gen_ai.usage.input_tokens = %q, want %q", got, tc.in)
			}
			if got := attr(chat.Attributes(), "gen_ai.usage.output_tokens"); got != tc.out {
				t.Errorf("gen_ai.usage.output_tokens = %q, want %q", got, tc.out)
			}
			tokens := map[string]int64{}
			if m := find(tel.metrics(t), otelguard.TokenUsageMetric); m != nil {
				for _, p := range m.Data.(metricdata.Histogram[int64]).DataPoints {
					typ, _ := p.Attributes.Value("gen_ai.token.type")
					tokens[typ.AsString()] += p.Sum
				}
			}
			if got := len(tokens) > 0; got != tc.wantPoint {
				t.Fatalf("%s points %v, want points: %v", otelguard.TokenUsageMetric, tokens, tc.wantPoint)
			}
			if tc.wantPoint && (attr(chat.Attributes(), "gen_ai.usage.input_tokens") != jsonInt(tokens["input"]) ||
				attr(chat.Attributes(), "gen_ai.usage.output_tokens") != jsonInt(tokens["output"])) {
				t.Errorf("%s = %v, want the span's counts", otelguard.TokenUsageMetric, tokens)
			}
		})
	}
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
