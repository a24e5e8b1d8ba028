package httpguard

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWireCalls reads the calls of each protocol's recorded sync
// answer (testdata/wire/<dir>/accepted.json, two calls), as
// (*response).toolCalls does once per guarded answer: the span walker's
// share of BenchmarkTransport's sync/guarded, alone.
func BenchmarkWireCalls(b *testing.B) {
	for _, p := range []struct {
		dir   string
		proto wireProtocol
	}{
		{"openai-chat", chatWire{}},
		{"openai-responses", responsesWire{}},
		{"anthropic", messagesWire{}},
		{"gemini", geminiWire{}},
		{"ollama", ollamaWire{}},
		{"bedrock", bedrockWire{}},
	} {
		resp, err := os.ReadFile(filepath.Join(wireDir, p.dir, "accepted.json"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p.dir, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(resp)))
			for b.Loop() {
				cs, err := p.proto.calls(resp)
				if err != nil || len(cs) != 2 {
					b.Fatalf("calls = %d, %v; want 2", len(cs), err)
				}
			}
		})
	}
}
