package middleware

import (
	"encoding/json"
	"math"

	"github.com/tmc/langchaingo/llms"
)

// The llms.ContentChoice.GenerationInfo keys langchaingo v0.1.14's providers
// report token usage under (see the package doc for which sets which).
var (
	inputKeys  = []string{"input_tokens", "InputTokens", "PromptTokens"}
	outputKeys = []string{"output_tokens", "OutputTokens", "CompletionTokens"}
)

// usage holds the tokens a response reports; a field is -1 when not reported.
type usage struct{ input, output int64 }

// usageOf reads the token usage of resp from the first choice that reports
// any: providers that return several choices (Anthropic's one per content
// block, OpenAI's n) repeat the response's usage in each.
func usageOf(resp *llms.ContentResponse) usage {
	u := usage{-1, -1}
	if resp == nil {
		return u
	}
	for _, ch := range resp.Choices {
		if ch == nil || len(ch.GenerationInfo) == 0 {
			continue
		}
		info := ch.GenerationInfo
		if nested, ok := info["usage"]; ok {
			info = mergeUsage(info, nested)
		}
		u.input = first(info, inputKeys)
		u.output = first(info, outputKeys)
		if u.input >= 0 || u.output >= 0 {
			return u
		}
	}
	return u
}

// mergeUsage adds the prompt and completion counts of a nested usage value
// (mistral's "usage": a mistral.UsageInfo, read through its JSON form) to
// info, under the names the other providers use.
func mergeUsage(info map[string]any, nested any) map[string]any {
	raw, err := json.Marshal(nested)
	if err != nil {
		return info
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return info
	}
	out := make(map[string]any, len(info)+2)
	for k, v := range info {
		out[k] = v
	}
	for _, pair := range [][2]string{{"prompt_tokens", "PromptTokens"}, {"completion_tokens", "CompletionTokens"}} {
		for _, k := range []string{pair[0], pair[1]} {
			if v, ok := m[k]; ok {
				if _, set := out[pair[1]]; !set {
					out[pair[1]] = v
				}
			}
		}
	}
	return out
}

// first returns the first of keys whose value in info is a whole,
// non-negative number, or -1.
func first(info map[string]any, keys []string) int64 {
	for _, k := range keys {
		if n, ok := count(info[k]); ok {
			return n
		}
	}
	return -1
}

// count converts a token count of any numeric type the providers use.
func count(v any) (int64, bool) {
	var n int64
	switch v := v.(type) {
	case int:
		n = int64(v)
	case int32:
		n = int64(v)
	case int64:
		n = v
	case uint32:
		n = int64(v)
	case float64:
		if v != math.Trunc(v) || v > math.MaxInt64 {
			return 0, false
		}
		n = int64(v)
	case json.Number:
		i, err := v.Int64()
		if err != nil {
			return 0, false
		}
		n = i
	default:
		return 0, false
	}
	return n, n >= 0
}
