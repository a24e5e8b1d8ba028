package httpguard_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/toolguard/toolguard/httpguard"
)

// argumentDeltaStream is a Responses stream of about size bytes whose one
// function call's arguments come one byte per
// response.function_call_arguments.delta event, then whole in its done
// events and response.completed.
func argumentDeltaStream(size int) []byte {
	var buf bytes.Buffer
	seq := 0
	write := func(typ, members string) {
		fmt.Fprintf(&buf, "event: %s\ndata: {\"type\":%q,%s,\"sequence_number\":%d}\n\n", typ, typ, members, seq)
		seq++
	}
	write("response.created", `"response":{"id":"resp_b","object":"response","created_at":1,"status":"in_progress","model":"gpt-4o","output":[]}`)
	write("response.output_item.added", `"output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"get_weather","arguments":"","status":"in_progress"}`)
	args := []byte(`{"city":"`)
	for _, c := range args {
		write("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":"fc_1","output_index":0,"delta":%q`, string(c)))
	}
	for buf.Len() < size {
		write("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":0,"delta":"x"`)
		args = append(args, 'x')
	}
	write("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":0,"delta":"\""`)
	write("response.function_call_arguments.delta", `"item_id":"fc_1","output_index":0,"delta":"}"`)
	args = append(args, `"}`...)
	quoted := fmt.Sprintf("%q", args)
	item := `{"id":"fc_1","type":"function_call","call_id":"call_1","name":"get_weather","arguments":` + quoted + `,"status":"completed"}`
	write("response.function_call_arguments.done", `"item_id":"fc_1","output_index":0,"arguments":`+quoted)
	write("response.output_item.done", `"output_index":0,"item":`+item)
	write("response.completed", `"response":{"id":"resp_b","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[`+item+`],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
	return buf.Bytes()
}

// BenchmarkResponsesArgumentDeltas streams a Responses answer of one-byte
// argument deltas (4 MiB, and 1 MiB beside it to read the growth) through
// ToolArgValidation: the cost of assembling a call from many small deltas,
// which must grow linearly with the stream. The call is valid: one
// upstream request.
func BenchmarkResponsesArgumentDeltas(b *testing.B) {
	req := readFixture(b, "openai-responses", "stream-request.json")
	for _, size := range []int{1 << 20, 4 << 20} {
		stream := argumentDeltaStream(size)
		c := &http.Client{Transport: httpguard.New(fixed{"text/event-stream", stream}, httpguard.ToolArgValidation())}
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				r, _ := http.NewRequest(http.MethodPost, "http://provider.test/v1/responses", bytes.NewReader(req))
				r.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(r)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || n < int64(size/50) {
					b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
				}
			}
		})
	}
}
