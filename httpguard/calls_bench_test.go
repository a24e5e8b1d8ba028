package httpguard

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWireCalls reads the calls of each protocol's recorded sync
// answer (testdata/wire/<dir>/accepted.json, two calls), as
// (*response).toolCalls does once per guarded answer: the span walker's
// share of BenchmarkTransport's sync/guarded, alone; before is the reader
// as it was before the span walker was made fast (calls_old_test.go), run
// beside it so that the two are compared under one load.
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
		for _, r := range []struct {
			name  string
			calls func([]byte) ([]wireCall, error)
		}{{"now", p.proto.calls}, {"before", oldCalls(p.proto)}} {
			b.Run(p.dir+"/"+r.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(resp)))
				for b.Loop() {
					cs, err := r.calls(resp)
					if err != nil || len(cs) != 2 {
						b.Fatalf("calls = %d, %v; want 2", len(cs), err)
					}
				}
			})
		}
	}
}
