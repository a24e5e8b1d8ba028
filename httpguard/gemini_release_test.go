package httpguard

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// geminiStreamRequest declares get_weather(city, unit), unit optional.
const geminiStreamRequest = `{"contents":[{"parts":[{"text":"Weather in Paris and Lyon?"}],"role":"user"}],` +
	`"tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}}]}]}`

// geminiSSE is the stream of chunks as Gemini writes it.
func geminiSSE(chunks ...string) string {
	var s strings.Builder
	for _, c := range chunks {
		s.WriteString("data: " + c + "\r\n\r\n")
	}
	return s.String()
}

// geminiChunkJSON is a chunk of candidate parts, with finishReason when
// finish is not "".
func geminiChunkJSON(parts, finish string) string {
	f := ""
	if finish != "" {
		f = `"finishReason":"` + finish + `",`
	}
	return `{"candidates":[{"content":{"parts":[` + parts + `],"role":"model"},` + f + `"index":0}],"usageMetadata":{"promptTokenCount":20,"totalTokenCount":20},"modelVersion":"gemini-2.5-flash","responseId":"resp-7"}`
}

// streamThrough sends a streaming Gemini request through stages, whose
// upstream answers the i-th request with bodies[i] (the last one past
// them), and returns what the client read and the upstream requests made.
func streamThrough(t *testing.T, stages []Middleware, bodies ...string) (string, int) {
	t.Helper()
	return streamThroughAt(t, stages, "http://gemini.test/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		geminiStreamRequest, "text/event-stream", bodies...)
}

// streamThroughAt is streamThrough of the request body to url, the
// upstream answering with bodies of type ctype.
func streamThroughAt(t *testing.T, stages []Middleware, url, body, ctype string, bodies ...string) (string, int) {
	t.Helper()
	var n atomic.Int32
	up := upstreamFunc(func(r *http.Request) (*http.Response, error) {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		i := int(n.Add(1)) - 1
		if i >= len(bodies) {
			i = len(bodies) - 1
		}
		h := http.Header{"Content-Type": {ctype}}
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(bodies[i])), Request: r}, nil
	})
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: New(up, stages...)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), int(n.Load())
}

// geminiStacks are the stages a stream goes through: validation alone,
// and the stack the package documentation recommends.
func geminiStacks() map[string][]Middleware {
	return map[string][]Middleware{
		"validation": {ToolArgValidation()},
		"stack":      {ToolCallLimit(guard.WithRunLimit(1000)), ToolArgValidation(), ModelRetry()},
	}
}

// A stream whose calls are valid and unchanged reaches the client as the
// upstream sent it, event for event: the calls in the chunks they came in,
// the text after them and the usage chunk after that, not one chunk
// written anew.
func TestGeminiStreamReleasedAsSent(t *testing.T) {
	up := geminiSSE(
		geminiChunkJSON(`{"text":"Let me check."}`, ""),
		geminiChunkJSON(`{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"dHMtMQ=="}`, ""),
		geminiChunkJSON(`{"functionCall":{"name":"get_weather","args":{"city":"Lyon","unit":"C"}}},{"text":"Both asked."}`, ""),
		geminiChunkJSON(`{"text":""}`, "STOP"))
	want := strings.ReplaceAll(up, "\r\n", "\n")
	for name, stages := range geminiStacks() {
		t.Run(name, func(t *testing.T) {
			got, n := streamThrough(t, stages, up)
			if got != want || n != 1 {
				t.Errorf("%d upstream requests; the client read\n%s\nwant the upstream's events\n%s", n, got, want)
			}
		})
	}
}

// A stream whose call the guard cleans (a null stripped) is written as
// before: the calls whole, cleaned, in one chunk after the text; one whose
// call is invalid is asked again, and the client reads the second
// attempt's calls only.
func TestGeminiStreamChangedIsWritten(t *testing.T) {
	text := geminiChunkJSON(`{"text":"Let me check."}`, "")
	cleaned := geminiSSE(text,
		geminiChunkJSON(`{"functionCall":{"name":"get_weather","args":{"city":"Paris","unit":null}}}`, ""),
		geminiChunkJSON(`{"functionCall":{"name":"get_weather","args":{"city":"Lyon"}}}`, "STOP"))
	invalid := geminiSSE(text, geminiChunkJSON(`{"functionCall":{"name":"get_weather","args":{"city":42}}}`, "STOP"))
	valid := geminiSSE(geminiChunkJSON(`{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}`, "STOP"))
	for name, stages := range geminiStacks() {
		t.Run(name+"/cleaned", func(t *testing.T) {
			got, _ := streamThrough(t, stages, cleaned)
			want := geminiSSE(text, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}},{"functionCall":{"name":"get_weather","args":{"city":"Lyon"}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":20,"totalTokenCount":20},"modelVersion":"gemini-2.5-flash","responseId":"resp-7"}`)
			if want = strings.ReplaceAll(want, "\r\n", "\n"); got != want {
				t.Errorf("the client read\n%s\nwant\n%s", got, want)
			}
		})
		t.Run(name+"/reasked", func(t *testing.T) {
			got, n := streamThrough(t, stages, invalid, valid)
			want := geminiSSE(text, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":20,"totalTokenCount":20},"modelVersion":"gemini-2.5-flash","responseId":"resp-7"}`)
			if want = strings.ReplaceAll(want, "\r\n", "\n"); got != want || n != 2 {
				t.Errorf("%d upstream requests; the client read\n%s\nwant\n%s", n, got, want)
			}
		})
	}
}

// upstreamFunc is an upstream as a function.
type upstreamFunc func(*http.Request) (*http.Response, error)

func (f upstreamFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
