package httpguard

import (
	"context"
	"strings"
	"testing"
)

// bigCity is a city name of 5 MiB: a call of more than half of MaxBody,
// which a stream carries whole.
func bigCity() string { return strings.Repeat("x", 5<<20) }

// A Gemini stream whose calls hold more than half of MaxBody passes, as it
// did before the gate held its chunks for release: what the gate holds for
// release is bounded on its own, not counted a second time against the
// assembly's bound. It reaches the client as the upstream sent it.
func TestGeminiStreamLargeCallsPass(t *testing.T) {
	t.Parallel()
	call := `{"functionCall":{"name":"get_weather","args":{"city":"` + strings.Repeat("x", 2<<20) + `"}}}`
	upstream := geminiSSE(geminiChunkJSON(`{"text":"Let me check."}`, ""), geminiChunkJSON(call, ""), geminiChunkJSON(call, "STOP"))
	got, n := streamThrough(t, []Middleware{ToolArgValidation()}, upstream)
	g, w := events(t, []byte(got)), events(t, []byte(upstream))
	if n != 1 || len(g) != len(w) {
		t.Fatalf("%d upstream requests; the client read %d events (%.80q…), want the upstream's %d", n, len(g), got, len(w))
	}
	for i := range g {
		if g[i].Event != w[i].Event || string(g[i].Data) != string(w[i].Data) {
			t.Errorf("event %d is %.80s, the upstream sent %.80s", i, g[i].Data, w[i].Data)
		}
	}
}

// The same for Bedrock: a call's input of 5 MiB in fragments passes, as
// the upstream sent it.
func TestBedrockStreamLargeCallPasses(t *testing.T) {
	t.Parallel()
	city := bigCity()
	var fragments []string
	input := `{"city":"` + city + `"}`
	for len(input) > 0 {
		k := min(len(input), 512<<10)
		fragments, input = append(fragments, input[:k]), input[k:]
	}
	upstream := bedrockStream("tooluse_1", fragments...)
	srv := newBedrockServer(t, converseStream(upstream))
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), bedrockURL(srv, "converse-stream"), []byte(bedrockRequest))
	got := readClientStream(t, ex.body)
	if ex.resp.StatusCode != 200 || len(got) != len(upstream) {
		t.Fatalf("status %d, the client read %d events, the upstream sent %d (%.200s)", ex.resp.StatusCode, len(got), len(upstream), ex.body)
	}
	for i := range got {
		if got[i].Event != upstream[i].Event || string(got[i].Data) != string(upstream[i].Data) {
			t.Errorf("event %d is %s %.80s, the upstream sent %s %.80s", i, got[i].Event, got[i].Data, upstream[i].Event, upstream[i].Data)
		}
	}
}
