package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	goopenai "github.com/sashabaranov/go-openai"
	"github.com/tmc/langchaingo/llms"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"google.golang.org/genai"
)

// These tests feed the SDKs what httpguard's wire code wrote: the golden
// files its unit tests keep under testdata/wire (a response with cleaned
// arguments written back, a re-ask body, a fail-closed error body, the
// client streams its gates wrote), and check that each SDK reads them
// through its own accessors. The first recorded call's arguments were
// cleaned from {"city": 42} to {"city":"Paris"}; the second,
// {"city": "Lyon"}, was left as it was.

func golden(t *testing.T, proto, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wireDir, proto, name))
	if err != nil {
		t.Fatalf("%v (go test ./httpguard -update writes it)", err)
	}
	return string(b)
}

// serve answers one request with body, as a JSON body or, for .sse files,
// an event stream.
func serve(t *testing.T, proto, name string) *fp.Server {
	t.Helper()
	ct := "application/json"
	if strings.HasSuffix(name, ".sse") {
		ct = "text/event-stream"
	}
	srv := fp.New(fp.Raw(200, golden(t, proto, name), "Content-Type", ct))
	t.Cleanup(srv.Close)
	return srv
}

var wantArgs = []string{`{"city":"Paris"}`, `{"city":"Lyon"}`}

func checkArgs(t *testing.T, who string, got []string, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s read %d calls %q, want %q", who, len(got), got, want)
		return
	}
	for i := range got {
		if !jsonEq(t, got[i], want[i]) {
			t.Errorf("%s read call %d arguments %s, want %s", who, i, got[i], want[i])
		}
	}
}

// A response with cleaned arguments written back reads back cleaned
// through every SDK's accessors.
func TestSDKsReadAcceptedResponse(t *testing.T) {
	ctx := context.Background()
	t.Run("openai-go chat AsFunction", func(t *testing.T) {
		cc, err := openaiClient(serve(t, "openai-chat", "accepted.json")).Chat.Completions.New(ctx, chatParams())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tc := range cc.Choices[0].Message.ToolCalls {
			got = append(got, tc.AsFunction().Function.Arguments)
		}
		checkArgs(t, "AsFunction", got, wantArgs)
		// ToParam (the message replayed into the next request) too.
		p := cc.Choices[0].Message.ToParam()
		got = got[:0]
		for _, tc := range p.OfAssistant.ToolCalls {
			got = append(got, tc.OfFunction.Function.Arguments)
		}
		checkArgs(t, "ToParam", got, wantArgs)
	})
	t.Run("go-openai", func(t *testing.T) {
		resp, err := goopenaiClient(serve(t, "openai-chat", "accepted.json")).CreateChatCompletion(ctx, goopenaiRequest())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tc := range resp.Choices[0].Message.ToolCalls {
			got = append(got, tc.Function.Arguments)
		}
		checkArgs(t, "go-openai", got, wantArgs)
	})
	t.Run("openai-go responses AsFunctionCall", func(t *testing.T) {
		r, err := openaiClient(serve(t, "openai-responses", "accepted.json")).Responses.New(ctx, responsesParams())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range r.Output {
			if it.Type == "function_call" {
				got = append(got, it.AsFunctionCall().Arguments)
			}
		}
		checkArgs(t, "AsFunctionCall", got, wantArgs)
	})
	t.Run("anthropic AsToolUse ToParam", func(t *testing.T) {
		m, err := anthropicClient(serve(t, "anthropic", "accepted.json")).Messages.New(ctx, messageParams())
		if err != nil {
			t.Fatal(err)
		}
		var got, param []string
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				got = append(got, string(b.AsToolUse().Input))
			}
		}
		for _, b := range m.ToParam().OfAssistant.Content {
			if b.OfToolUse != nil {
				param = append(param, mustJSON(b.OfToolUse.Input))
			}
		}
		checkArgs(t, "AsToolUse", got, wantArgs)
		checkArgs(t, "ToParam", param, wantArgs)
	})
	t.Run("genai FunctionCalls", func(t *testing.T) {
		r, err := genaiClient(t, serve(t, "gemini", "accepted.json"), nil).Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("Weather in Paris?"), genaiConfig())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range r.FunctionCalls() {
			if c.ID != "" {
				t.Errorf("genai read an id %q that Gemini did not send", c.ID)
			}
			got = append(got, mustJSON(c.Args))
		}
		checkArgs(t, "FunctionCalls", got, wantArgs)
	})
	for _, name := range []string{"openai", "anthropic", "googleai"} {
		t.Run("langchaingo "+name, func(t *testing.T) {
			dir := map[string]string{"openai": "openai-chat", "anthropic": "anthropic", "googleai": "gemini"}[name]
			m := lcModels(t, serve(t, dir, "accepted.json"))[name]
			resp, err := m.GenerateContent(ctx, lcMessages(), llms.WithTools(lcTools()))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range resp.Choices {
				for _, tc := range ch.ToolCalls {
					got = append(got, tc.FunctionCall.Arguments)
				}
			}
			checkArgs(t, "langchaingo "+name, got, wantArgs)
		})
	}
}

// The client streams httpguard's gates wrote — the calls accepted with
// cleaned arguments, and a rejected attempt followed by its re-ask — are
// taken whole by each SDK's accumulator: the text once, the accepted
// calls only, one id.
func TestSDKsReadGateStreams(t *testing.T) {
	ctx := context.Background()
	streams := []struct {
		file string
		args []string
	}{{"gate-accept.sse", wantArgs}, {"gate-reask.sse", wantArgs[:1]}}
	for _, s := range streams {
		t.Run(s.file, func(t *testing.T) {
			t.Run("openai-go ChatCompletionAccumulator", func(t *testing.T) {
				st := openaiClient(serve(t, "openai-chat", s.file)).Chat.Completions.NewStreaming(ctx, chatParams())
				var acc openai.ChatCompletionAccumulator
				for st.Next() {
					if !acc.AddChunk(st.Current()) {
						t.Fatalf("AddChunk refused %s", st.Current().RawJSON())
					}
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				m := acc.Choices[0].Message
				var got []string
				for _, tc := range m.ToolCalls {
					got = append(got, tc.Function.Arguments)
				}
				checkArgs(t, "accumulator", got, s.args)
				if m.Content != "Let me check." || acc.Choices[0].FinishReason != "tool_calls" || acc.Usage.TotalTokens == 0 {
					t.Errorf("accumulated content %q finish %q usage %+v", m.Content, acc.Choices[0].FinishReason, acc.Usage)
				}
			})
			t.Run("go-openai Recv", func(t *testing.T) {
				st, err := goopenaiClient(serve(t, "openai-chat", s.file)).CreateChatCompletionStream(ctx, goopenaiRequest())
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				var text string
				args := map[int]string{}
				for {
					c, err := st.Recv()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					for _, ch := range c.Choices {
						text += ch.Delta.Content
						for _, tc := range ch.Delta.ToolCalls {
							args[*tc.Index] += tc.Function.Arguments
						}
					}
				}
				var got []string
				for i := 0; i < len(args); i++ {
					got = append(got, args[i])
				}
				checkArgs(t, "go-openai", got, s.args)
				if text != "Let me check." {
					t.Errorf("text %q", text)
				}
			})
			t.Run("openai-go responses events", func(t *testing.T) {
				st := openaiClient(serve(t, "openai-responses", s.file)).Responses.NewStreaming(ctx, responsesParams())
				var text string
				var doneArgs []string
				var final *responses.Response
				seq := int64(-1)
				for st.Next() {
					ev := st.Current()
					if ev.SequenceNumber != seq+1 {
						t.Errorf("sequence_number %d after %d", ev.SequenceNumber, seq)
					}
					seq = ev.SequenceNumber
					switch ev.Type {
					case "response.output_text.delta":
						text += ev.Delta
					case "response.function_call_arguments.done":
						doneArgs = append(doneArgs, ev.Arguments)
					case "response.completed":
						r := ev.AsResponseCompleted().Response
						final = &r
					}
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				checkArgs(t, "function_call_arguments.done", doneArgs, s.args)
				if text != "Let me check." || final == nil {
					t.Fatalf("text %q, completed %v", text, final != nil)
				}
				var got []string
				for _, it := range final.Output {
					if it.Type == "function_call" {
						got = append(got, it.AsFunctionCall().Arguments)
					}
				}
				checkArgs(t, "response.completed", got, s.args)
				if final.OutputText() != "Let me check." {
					t.Errorf("completed OutputText %q", final.OutputText())
				}
			})
			t.Run("anthropic Message.Accumulate", func(t *testing.T) {
				st := anthropicClient(serve(t, "anthropic", s.file)).Messages.NewStreaming(ctx, messageParams())
				var m anthropic.Message
				for st.Next() {
					if err := m.Accumulate(st.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				var got []string
				text := ""
				for _, b := range m.Content {
					switch b.Type {
					case "tool_use":
						got = append(got, string(b.AsToolUse().Input))
					case "text":
						text += b.AsText().Text
					case "thinking":
						if b.AsThinking().Signature != "c2lnLTE=" {
							t.Errorf("thinking signature %q", b.AsThinking().Signature)
						}
					}
				}
				checkArgs(t, "Accumulate", got, s.args)
				if text != "Let me check." || m.StopReason != "tool_use" || m.ID == "" {
					t.Errorf("text %q stop %q id %q", text, m.StopReason, m.ID)
				}
				// The accumulated message replays as a request message.
				if p := m.ToParam(); len(p.OfAssistant.Content) != len(m.Content) {
					t.Errorf("ToParam has %d blocks, want %d", len(p.OfAssistant.Content), len(m.Content))
				}
			})
			t.Run("genai iterator", func(t *testing.T) {
				var text string
				var got []string
				ids := map[string]bool{}
				for r, err := range genaiClient(t, serve(t, "gemini", s.file), nil).Models.GenerateContentStream(ctx, "gemini-2.5-flash", genai.Text("Weather in Paris?"), genaiConfig()) {
					if err != nil {
						t.Fatal(err)
					}
					text += r.Text()
					ids[r.ResponseID] = true
					for _, c := range r.FunctionCalls() {
						got = append(got, mustJSON(c.Args))
					}
				}
				checkArgs(t, "genai", got, s.args)
				if text != "Let me check." || len(ids) != 1 {
					t.Errorf("text %q, response ids %v", text, ids)
				}
			})
			for _, name := range []string{"openai", "anthropic"} {
				t.Run("langchaingo "+name, func(t *testing.T) {
					dir := map[string]string{"openai": "openai-chat", "anthropic": "anthropic"}[name]
					m := lcModels(t, serve(t, dir, s.file))[name]
					var streamed strings.Builder
					resp, err := m.GenerateContent(ctx, lcMessages(), llms.WithTools(lcTools()), llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
						streamed.Write(b)
						return nil
					}))
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, ch := range resp.Choices {
						for _, tc := range ch.ToolCalls {
							got = append(got, tc.FunctionCall.Arguments)
						}
					}
					checkArgs(t, "langchaingo "+name, got, s.args)
					if !strings.Contains(streamed.String(), "Let me check.") {
						t.Errorf("streamed %q", streamed.String())
					}
				})
			}
		})
	}
}

// A re-ask body httpguard built is a request each SDK's own types take:
// the replayed turn (ids, thinking signatures, reasoning items, thought
// signatures) and the tool results, in the protocol's shape.
func TestSDKTypesTakeReask(t *testing.T) {
	t.Run("openai-go ChatCompletionNewParams", func(t *testing.T) {
		var p openai.ChatCompletionNewParams
		if err := json.Unmarshal([]byte(golden(t, "openai-chat", "reask.json")), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Messages) != 4 || p.Messages[1].OfAssistant == nil || p.Messages[2].OfTool == nil {
			t.Fatalf("messages = %+v", p.Messages)
		}
		a := p.Messages[1].OfAssistant
		if a.ToolCalls[0].OfFunction.ID != "call_1" || a.ToolCalls[0].OfFunction.Function.Arguments != `{"city": 42}` {
			t.Errorf("assistant = %+v", a)
		}
		if tm := p.Messages[2].OfTool; tm.ToolCallID != "call_1" || !strings.Contains(tm.Content.OfString.Value, "got number") {
			t.Errorf("tool message = %+v", tm)
		}
	})
	t.Run("go-openai ChatCompletionRequest", func(t *testing.T) {
		var r goopenai.ChatCompletionRequest
		if err := json.Unmarshal([]byte(golden(t, "openai-chat", "reask.json")), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) != 4 || r.Messages[1].ToolCalls[1].ID != "call_2" || r.Messages[3].Role != "tool" || r.Messages[3].ToolCallID != "call_2" {
			t.Errorf("messages = %+v", r.Messages)
		}
	})
	t.Run("openai-go ResponseNewParams", func(t *testing.T) {
		var p responses.ResponseNewParams
		if err := json.Unmarshal([]byte(golden(t, "openai-responses", "reask.json")), &p); err != nil {
			t.Fatal(err)
		}
		in := p.Input.OfInputItemList
		if len(in) != 7 {
			t.Fatalf("input = %d items", len(in))
		}
		if rs := in[1].OfReasoning; rs == nil || rs.ID != "rs_1" || rs.EncryptedContent.Value != "c2lnLTE=" {
			t.Errorf("reasoning item = %+v", in[1])
		}
		if fc := in[3].OfFunctionCall; fc == nil || fc.CallID != "call_1" || fc.Arguments != `{"city": 42}` {
			t.Errorf("function call = %+v", in[3])
		}
		if out := in[5].OfFunctionCallOutput; out == nil || out.CallID.Value != "call_1" || !strings.Contains(out.Output.OfString.Value, "got number") {
			t.Errorf("function call output = %+v", in[5])
		}
	})
	t.Run("anthropic MessageNewParams", func(t *testing.T) {
		var p anthropic.MessageNewParams
		if err := json.Unmarshal([]byte(golden(t, "anthropic", "reask.json")), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Messages) != 3 {
			t.Fatalf("messages = %d", len(p.Messages))
		}
		a := p.Messages[1].OfAssistant.Content
		if th := a[0].OfThinking; th == nil || th.Signature != "c2lnLTE=" {
			t.Errorf("thinking = %+v", a[0])
		}
		if tu := a[2].OfToolUse; tu == nil || tu.ID != "toolu_1" {
			t.Errorf("tool_use = %+v", a[2])
		}
		u := p.Messages[2].OfUser.Content
		if r := u[0].OfToolResult; r == nil || r.ToolUseID != "toolu_1" || !r.IsError.Value {
			t.Errorf("tool_result 0 = %+v", u[0])
		}
		if r := u[1].OfToolResult; r == nil || r.ToolUseID != "toolu_2" || r.IsError.Valid() {
			t.Errorf("tool_result 1 = %+v", u[1])
		}
	})
	t.Run("genai Content", func(t *testing.T) {
		var body struct {
			Contents []*genai.Content `json:"contents"`
		}
		if err := json.Unmarshal([]byte(golden(t, "gemini", "reask.json")), &body); err != nil {
			t.Fatal(err)
		}
		c := body.Contents
		if len(c) != 3 || c[1].Role != "model" || string(c[2].Parts[0].FunctionResponse.Name) != "get_weather" {
			t.Fatalf("contents = %+v", c)
		}
		if sig := string(c[1].Parts[2].ThoughtSignature); sig != "ts-1" || c[1].Parts[2].FunctionCall.Args["city"] != float64(42) {
			t.Errorf("replayed call part = %+v (signature %q)", c[1].Parts[2], sig)
		}
		fr := c[2].Parts[0].FunctionResponse
		if fr.ID != "" || !strings.Contains(fr.Response["error"].(string), "got number") {
			t.Errorf("function response = %+v", fr)
		}
	})
}

// A fail-closed 422 with x-should-retry: false is each SDK's API error,
// sent once: no SDK retries it, whatever its retry setting.
func TestSDKsSurfaceFailClosed(t *testing.T) {
	ctx := context.Background()
	failing := func(t *testing.T, proto string) *fp.Server {
		t.Helper()
		// Three copies: a retrying SDK would take a second one.
		st := fp.Raw(422, golden(t, proto, "error.json"), "x-should-retry", "false")
		srv := fp.New(st, st, st)
		t.Cleanup(srv.Close)
		return srv
	}
	once := func(t *testing.T, srv *fp.Server) {
		t.Helper()
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("the SDK sent %d requests, want 1", n)
		}
	}
	t.Run("openai-go", func(t *testing.T) {
		srv := failing(t, "openai-chat")
		_, err := openaiClient(srv).Chat.Completions.New(ctx, chatParams())
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || apiErr.Type != "invalid_tool_calls" || !strings.Contains(apiErr.Message, "got number") {
			t.Errorf("err = %v", err)
		}
		once(t, srv)
	})
	t.Run("openai-go responses", func(t *testing.T) {
		srv := failing(t, "openai-responses")
		_, err := openaiClient(srv).Responses.New(ctx, responsesParams())
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || apiErr.Code != "invalid_tool_calls" {
			t.Errorf("err = %v", err)
		}
		once(t, srv)
	})
	t.Run("anthropic", func(t *testing.T) {
		srv := failing(t, "anthropic")
		_, err := anthropicClient(srv).Messages.New(ctx, messageParams())
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || !strings.Contains(apiErr.RawJSON(), "invalid_tool_calls") {
			t.Errorf("err = %v", err)
		}
		once(t, srv)
	})
	t.Run("genai", func(t *testing.T) {
		srv := failing(t, "gemini")
		attempts := int32(3)
		c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "g", Backend: genai.BackendGeminiAPI,
			HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL, RetryOptions: &genai.HTTPRetryOptions{Attempts: &attempts}}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("hi"), genaiConfig())
		var apiErr genai.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != 422 || apiErr.Status != "INVALID_ARGUMENT" || !strings.Contains(apiErr.Message, "got number") {
			t.Errorf("err = %v", err)
		}
		once(t, srv)
	})
	t.Run("go-openai", func(t *testing.T) {
		srv := failing(t, "openai-chat")
		_, err := goopenaiClient(srv).CreateChatCompletion(ctx, goopenaiRequest())
		var apiErr *goopenai.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 422 || apiErr.Type != "invalid_tool_calls" {
			t.Errorf("err = %v", err)
		}
		once(t, srv)
	})
	for _, name := range []string{"openai", "anthropic", "googleai"} {
		t.Run("langchaingo "+name, func(t *testing.T) {
			dir := map[string]string{"openai": "openai-chat", "anthropic": "anthropic", "googleai": "gemini"}[name]
			srv := failing(t, dir)
			_, err := lcModels(t, srv)[name].GenerateContent(ctx, lcMessages(), llms.WithTools(lcTools()))
			if err == nil || !strings.Contains(err.Error(), "got number") {
				t.Errorf("err = %v", err)
			}
			once(t, srv)
		})
	}
}

// How each SDK retries by default, measured on a 429 that asks for a
// retry after 1 ms: the documented interplay with httpguard's ModelRetry.
func TestSDKRetryDefaults(t *testing.T) {
	ctx := context.Background()
	rateLimited := func(t *testing.T) *fp.Server {
		t.Helper()
		e := fp.Error(http.StatusTooManyRequests, "retry-after-ms", "1", "Retry-After", "0")
		srv := fp.New(e, e, e, e)
		t.Cleanup(srv.Close)
		return srv
	}
	tests := []struct {
		name string
		call func(srv *fp.Server) error
		want int // requests sent for one call
	}{
		{"openai-go", func(srv *fp.Server) error {
			_, err := openaiClient(srv).Chat.Completions.New(ctx, chatParams())
			return err
		}, 3},
		{"anthropic", func(srv *fp.Server) error {
			_, err := anthropicClient(srv).Messages.New(ctx, messageParams())
			return err
		}, 3},
		{"genai", func(srv *fp.Server) error {
			_, err := genaiClient(t, srv, nil).Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("hi"), genaiConfig())
			return err
		}, 1},
		{"go-openai", func(srv *fp.Server) error {
			_, err := goopenaiClient(srv).CreateChatCompletion(ctx, goopenaiRequest())
			return err
		}, 1},
		{"langchaingo openai", func(srv *fp.Server) error {
			_, err := lcModels(t, srv)["openai"].GenerateContent(ctx, lcMessages())
			return err
		}, 1},
		{"langchaingo anthropic", func(srv *fp.Server) error {
			_, err := lcModels(t, srv)["anthropic"].GenerateContent(ctx, lcMessages())
			return err
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := rateLimited(t)
			if err := tc.call(srv); err == nil {
				t.Fatal("a rate-limited call succeeded")
			}
			if n := len(srv.Requests()); n != tc.want {
				t.Errorf("%s sent %d requests for one rate-limited call, want %d", tc.name, n, tc.want)
			}
		})
	}
}
