package httpguard_test

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/toolguard/toolguard/httpguard"
)

// anthropicOneByteStream is an Anthropic stream of about size bytes whose
// one tool call's input, {"city":"xx…x"}, comes one byte per
// input_json_delta: the worst case for assembling the input from
// fragments, which must cost time linear in the fragments.
func anthropicOneByteStream(size int) []byte {
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n")
	delta := func(s string) {
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":" + s + "}}\n\n")
	}
	for _, s := range []string{`"{"`, `"\""`, `"c"`, `"i"`, `"t"`, `"y"`, `"\""`, `":"`, `"\""`} {
		delta(s)
	}
	for b.Len() < size-512 {
		delta(`"x"`)
	}
	delta(`"\""`)
	delta(`"}"`)
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.Bytes()
}

// BenchmarkAnthropicOneByteDeltas measures a guarded Anthropic stream of 4
// MiB (and of 1 MiB) whose call's input arrives one byte per
// input_json_delta (about 35,000 events in 4 MiB): the guard holds,
// assembles and validates the call, and the client reads it whole.
func BenchmarkAnthropicOneByteDeltas(b *testing.B) {
	for _, size := range []int{1 << 20, 4 << 20} {
		b.Run(strconv.Itoa(size>>20)+"MiB", func(b *testing.B) { benchmarkOneByteDeltas(b, size) })
	}
}

// benchmarkOneByteDeltas is BenchmarkAnthropicOneByteDeltas over a stream
// of size bytes: the 1 MiB run beside the 4 MiB one shows the cost linear
// in the stream (a quarter of the time).
func benchmarkOneByteDeltas(b *testing.B, size int) {
	up := fixed{"text/event-stream", anthropicOneByteStream(size)}
	body := readFixture(b, "anthropic", "stream-request.json")
	c := &http.Client{Transport: httpguard.New(up, httpguard.ToolArgValidation())}
	b.ReportAllocs()
	b.SetBytes(int64(len(up.body)))
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, "http://provider.test/v1/messages", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The call is valid: the client reads the stream as the upstream
		// sent it, one byte a delta.
		if resp.StatusCode != http.StatusOK || !bytes.Equal(out, up.body) {
			b.Fatalf("status %d, %d bytes, want the upstream's %d: %.300s", resp.StatusCode, len(out), len(up.body), out)
		}
	}
}
