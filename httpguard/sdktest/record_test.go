package sdktest

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"google.golang.org/genai"
)

var record = flag.Bool("record", false, "rewrite the recorded exchanges under testdata/wire")

// wireDir is where the recorded exchanges live: the repository's
// top-level testdata, shared with httpguard's unit tests.
const wireDir = "../../testdata/wire"

// recorder is a RoundTripper that keeps every request body and the
// response body the client read.
type recorder struct {
	mu        sync.Mutex
	reqs, res [][]byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	r.mu.Lock()
	r.reqs, r.res = append(r.reqs, body), append(r.res, rb)
	r.mu.Unlock()
	return resp, nil
}

// The scripted turns of every recorded exchange: a first attempt with a
// preamble, reasoning and two calls, the first one bad ("city" must be a
// string), and a second attempt with the corrected call.
func firstAttempt() fp.Step {
	return fp.Reply(fp.Thinking("The user wants the weather.", "c2lnLTE="), fp.Text("Let me check."),
		fp.Call("get_weather", `{"city": 42}`).WithSignature("dHMtMQ=="), fp.Call("get_weather", `{"city": "Lyon"}`)).WithUsage(20, 12)
}

func secondAttempt() fp.Step {
	return fp.Reply(fp.Text("Sorry, again."), fp.Call("get_weather", `{"city": "Paris"}`).WithSignature("dHMtMg==")).WithUsage(40, 9)
}

// exchange records one protocol's exchanges: the sync request and
// response, and the streaming request with the streams of both attempts.
type exchange struct {
	dir             string
	sync, streamReq func(t *testing.T, hc *http.Client, srv *fp.Server)
}

func recordExchanges(t *testing.T) []exchange {
	ctx := context.Background()
	return []exchange{
		{dir: "openai-chat", sync: func(t *testing.T, hc *http.Client, srv *fp.Server) {
			c := openaiClient(srv, option.WithHTTPClient(hc))
			if _, err := c.Chat.Completions.New(ctx, chatParams()); err != nil {
				t.Fatal(err)
			}
		}, streamReq: func(t *testing.T, hc *http.Client, srv *fp.Server) {
			c := openaiClient(srv, option.WithHTTPClient(hc))
			p := chatParams()
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			s := c.Chat.Completions.NewStreaming(ctx, p)
			for s.Next() {
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{dir: "openai-responses", sync: func(t *testing.T, hc *http.Client, srv *fp.Server) {
			c := openaiClient(srv, option.WithHTTPClient(hc))
			if _, err := c.Responses.New(ctx, responsesParams()); err != nil {
				t.Fatal(err)
			}
		}, streamReq: func(t *testing.T, hc *http.Client, srv *fp.Server) {
			c := openaiClient(srv, option.WithHTTPClient(hc))
			s := c.Responses.NewStreaming(ctx, responsesParams())
			for s.Next() {
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{dir: "anthropic", sync: func(t *testing.T, hc *http.Client, srv *fp.Server) {
			c := anthropicClient(srv, aoption.WithHTTPClient(hc))
			if _, err := c.Messages.New(ctx, messageParams()); err != nil {
				t.Fatal(err)
			}
		}, streamReq: func(t *testing.T, hc *http.Client, srv *fp.Server) {
			c := anthropicClient(srv, aoption.WithHTTPClient(hc))
			s := c.Messages.NewStreaming(ctx, messageParams())
			var m anthropic.Message
			for s.Next() {
				if err := m.Accumulate(s.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
		}},
		{dir: "gemini", sync: func(t *testing.T, hc *http.Client, srv *fp.Server) {
			if _, err := genaiClient(t, srv, hc).Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("Weather in Paris?"), genaiConfig()); err != nil {
				t.Fatal(err)
			}
		}, streamReq: func(t *testing.T, hc *http.Client, srv *fp.Server) {
			for _, err := range genaiClient(t, srv, hc).Models.GenerateContentStream(ctx, "gemini-2.5-flash", genai.Text("Weather in Paris?"), genaiConfig()) {
				if err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
}

// TestRecordedExchanges records each protocol's exchange with its real
// SDK against fakeprovider and checks it against testdata/wire (rewritten
// with -record). httpguard's unit tests read these files.
func TestRecordedExchanges(t *testing.T) {
	for _, ex := range recordExchanges(t) {
		t.Run(ex.dir, func(t *testing.T) {
			rec := &recorder{}
			hc := &http.Client{Transport: rec}
			srv := fp.New(firstAttempt(), firstAttempt(), secondAttempt())
			defer srv.Close()
			ex.sync(t, hc, srv)
			ex.streamReq(t, hc, srv)
			ex.streamReq(t, hc, srv)
			files := map[string][]byte{
				"request.json":        rec.reqs[0],
				"response.json":       rec.res[0],
				"stream-request.json": rec.reqs[1],
				"stream.sse":          rec.res[1],
				"stream2.sse":         rec.res[2],
			}
			for name, got := range files {
				path := filepath.Join(wireDir, ex.dir, name)
				if *record {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -run TestRecordedExchanges -record)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s changed: got\n%s\nwant\n%s\n(run go test -run TestRecordedExchanges -record)", path, got, want)
				}
			}
		})
	}
}
