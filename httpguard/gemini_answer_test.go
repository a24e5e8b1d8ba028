package httpguard

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// A Gemini answer without calls, streamed through two stages (which return
// it without delivering it through their gates), reaches the client as it
// came: every chunk with its content, the last with its finishReason,
// nothing after it.
func TestGeminiStreamAnswerWithoutCallsWhole(t *testing.T) {
	srv := fp.New(fp.Reply(fp.Text("It is sunny in Paris.")))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		bytes.NewReader(fixture(t, "gemini", "stream-request.json")))
	resp, err := (&http.Client{Transport: New(nil, ToolCallLimit(guard.WithRunLimit(5)), ToolArgValidation())}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var finish []string
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: ")
		if !ok {
			continue
		}
		var c struct {
			Candidates []struct {
				Content *struct {
					Parts []struct{ Text string }
				}
				FinishReason string
			}
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil || len(c.Candidates) != 1 || c.Candidates[0].Content == nil {
			t.Fatalf("a chunk without content (%v): %s", err, data)
		}
		if len(finish) > 0 {
			t.Errorf("a chunk after the finishReason: %s", data)
		}
		for _, p := range c.Candidates[0].Content.Parts {
			text.WriteString(p.Text)
		}
		if f := c.Candidates[0].FinishReason; f != "" {
			finish = append(finish, f)
		}
	}
	if text.String() != "It is sunny in Paris." || len(finish) != 1 || finish[0] != "STOP" {
		t.Errorf("text %q, finish reasons %v; want the text once and one STOP:\n%s", text.String(), finish, body)
	}
}
