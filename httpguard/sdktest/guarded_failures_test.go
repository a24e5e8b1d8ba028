package sdktest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/cenkalti/backoff/v4"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

func noWait() guard.RetryOption {
	return guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })
}

// Failing closed reaches the program as the SDK's API error (422, type
// invalid_tool_calls), and the SDK, whose retries are on by default, does
// not retry it.
func TestGuardedFailClosedIsTheSDKsAPIError(t *testing.T) {
	t.Parallel()
	bad := fp.Reply(fp.Call("get_weather", `{"city": 42}`))
	hc := func() *http.Client {
		return &http.Client{Transport: httpguard.New(nil, httpguard.ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed()))}
	}

	srv := fp.New(bad, bad, bad, bad, bad, bad)
	defer srv.Close()
	_, err := openaiClient(srv, option.WithHTTPClient(hc())).Chat.Completions.New(context.Background(), guardedChatParams())
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 422 || oe.Type != "invalid_tool_calls" || !strings.Contains(oe.Message, "/city") {
		t.Errorf("openai-go: %v", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("openai-go: %d requests, want 2 (the SDK did not retry the 422)", n)
	}

	srv2 := fp.New(bad, bad, bad, bad, bad, bad)
	defer srv2.Close()
	_, err = anthropicClient(srv2, aoption.WithHTTPClient(hc())).Messages.New(context.Background(), guardedMessageParams())
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 422 || !strings.Contains(ae.Error(), "invalid_tool_calls") {
		t.Errorf("anthropic-sdk-go: %v", err)
	}
	if n := len(srv2.Requests()); n != 2 {
		t.Errorf("anthropic-sdk-go: %d requests, want 2", n)
	}

	// Streamed after the text went out: the stream ends with the guard's
	// error event, which the SDK reports as the stream's error.
	withText := fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": 42}`))
	srv3 := fp.New(withText, withText)
	defer srv3.Close()
	stream := openaiClient(srv3, option.WithHTTPClient(hc())).Chat.Completions.NewStreaming(context.Background(), guardedChatParams())
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "invalid_tool_calls") || len(acc.Choices) == 0 ||
		acc.Choices[0].Message.Content != "Let me check." || len(acc.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("openai-go stream: err %v, accumulated %+v", err, acc.ChatCompletion)
	}
}

// The SDKs' own retries multiply with ModelRetry's: openai-go's default 2
// retries over ModelRetry's 2 make 9 requests to a provider that keeps
// failing; with the SDK's retries off, 3. The program receives the
// provider's last 503 as the SDK's API error either way.
func TestGuardedRetriesMultiplyWithTheSDKs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []option.RequestOption
		want int
	}{
		{"openai-go default retries", nil, 9},
		{"openai-go WithMaxRetries(0)", []option.RequestOption{option.WithMaxRetries(0)}, 3},
	} {
		steps := make([]fp.Step, 12)
		for i := range steps {
			steps[i] = fp.Error(503, "retry-after-ms", "1")
		}
		srv := fp.New(steps...)
		defer srv.Close()
		hc := &http.Client{Transport: httpguard.New(nil, httpguard.ModelRetry(noWait()))}
		_, err := openaiClient(srv, append([]option.RequestOption{option.WithHTTPClient(hc)}, tc.opts...)...).
			Chat.Completions.New(context.Background(), guardedChatParams())
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 503 {
			t.Errorf("%s: %v", tc.name, err)
		}
		if n := len(srv.Requests()); n != tc.want {
			t.Errorf("%s: %d requests, want %d", tc.name, n, tc.want)
		} else {
			t.Logf("%s, ModelRetry (2 retries): %d requests to a failing provider", tc.name, n)
		}
	}
}

// A limit's stand-in answer (ExitEnd) streamed through openai-go's
// accumulator: a whole completion whose text names the limit, no call.
func TestGuardedStandInStream(t *testing.T) {
	t.Parallel()
	two := fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": "Paris"}`), fp.Call("get_weather", `{"city": "Rome"}`))
	srv := fp.New(two)
	defer srv.Close()
	hc := &http.Client{Transport: httpguard.New(nil, httpguard.ToolCallLimit(guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitEnd)))}
	ctx := guard.WithRun(context.Background())
	stream := openaiClient(srv, option.WithHTTPClient(hc)).Chat.Completions.NewStreaming(ctx, guardedChatParams())
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("AddChunk refused %s", stream.Current().RawJSON())
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	m := acc.Choices[0].Message
	if len(m.ToolCalls) != 0 || !strings.HasPrefix(m.Content, "Let me check.") || !strings.Contains(m.Content, "Tool call limit reached") {
		t.Errorf("accumulated %+v", m)
	}
}
