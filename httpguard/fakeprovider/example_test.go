package fakeprovider_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// A scripted provider answers each request with the next step, in the wire
// protocol the request's path names; Requests shows what it was sent.
func ExampleNew() {
	srv := fakeprovider.New(
		fakeprovider.Reply(fakeprovider.Text("Let me check."), fakeprovider.Call("get_weather", `{"city": 42}`)),
		fakeprovider.Error(http.StatusTooManyRequests, "Retry-After", "2"),
	)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"Weather in Paris?"}]}`))
	if err != nil {
		panic(err)
	}
	var cc struct {
		ID      string `json:"id"`
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	json.NewDecoder(resp.Body).Decode(&cc)
	resp.Body.Close()
	m := cc.Choices[0].Message
	fmt.Println(cc.ID, m.Content, cc.Choices[0].FinishReason)
	fmt.Println(m.ToolCalls[0].ID, m.ToolCalls[0].Function.Name, m.ToolCalls[0].Function.Arguments)

	resp, _ = http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"claude-sonnet-4-5"}`))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), string(body))

	for _, r := range srv.Requests() {
		fmt.Println(r.Method, r.Path, r.Protocol)
	}
	// Output:
	// chatcmpl-1 Let me check. tool_calls
	// call_1 get_weather {"city": 42}
	// 429 2 {"type":"error","error":{"type":"rate_limit_error","message":"fakeprovider: rate limit reached, retry later"}}
	// POST /v1/chat/completions openai-chat
	// POST /v1/messages anthropic
}
