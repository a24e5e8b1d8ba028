package sdktest

import (
	"context"
	"fmt"
	"testing"

	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3/option"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"github.com/toolguard/toolguard/retry"
	"google.golang.org/genai"
)

// sdkCall is one SDK client making one call to srv with its own retries
// off, so that the error it returns is the first response's.
type sdkCall struct {
	name  string
	proto fp.Protocol
	call  func(t *testing.T, srv *fp.Server) error
}

func sdkCalls() []sdkCall {
	ctx := context.Background()
	return []sdkCall{
		{"openai-go", fp.Chat, func(_ *testing.T, srv *fp.Server) error {
			_, err := openaiClient(srv, option.WithMaxRetries(0)).Chat.Completions.New(ctx, chatParams())
			return err
		}},
		{"openai-go responses", fp.Responses, func(_ *testing.T, srv *fp.Server) error {
			_, err := openaiClient(srv, option.WithMaxRetries(0)).Responses.New(ctx, responsesParams())
			return err
		}},
		{"anthropic", fp.Messages, func(_ *testing.T, srv *fp.Server) error {
			_, err := anthropicClient(srv, aoption.WithMaxRetries(0)).Messages.New(ctx, messageParams())
			return err
		}},
		// genai, go-openai and langchaingo's clients do not retry by
		// default (TestSDKRetryDefaults); the one-request check below
		// holds them to it.
		{"genai", fp.Gemini, func(t *testing.T, srv *fp.Server) error {
			_, err := genaiClient(t, srv, nil).Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("hi"), genaiConfig())
			return err
		}},
		{"go-openai", fp.Chat, func(_ *testing.T, srv *fp.Server) error {
			_, err := goopenaiClient(srv).CreateChatCompletion(ctx, goopenaiRequest())
			return err
		}},
		{"langchaingo openai", fp.Chat, func(t *testing.T, srv *fp.Server) error {
			_, err := lcModels(t, srv)["openai"].GenerateContent(ctx, lcMessages())
			return err
		}},
		{"langchaingo anthropic", fp.Messages, func(t *testing.T, srv *fp.Server) error {
			_, err := lcModels(t, srv)["anthropic"].GenerateContent(ctx, lcMessages())
			return err
		}},
	}
}

// neutralError is an error body in proto's shape whose words say nothing
// about retrying, so that only the status can decide.
func neutralError(proto fp.Protocol, status int) string {
	switch proto {
	case fp.Messages:
		return `{"type":"error","error":{"type":"error","message":"nope"}}`
	case fp.Gemini:
		return fmt.Sprintf(`{"error":{"code":%d,"message":"nope","status":"NOPE"}}`, status)
	}
	return `{"error":{"message":"nope","type":"nope","param":null,"code":null}}`
}

// Each SDK's own error for a failed call, as the SDK returns it, is
// classified by its HTTP status: every 5xx but 501 and 505 (Anthropic's
// 529 "overloaded" included) and 429 are retryable, a 400 is not, and
// retry.Status reports the status. The "nope" bodies carry no word the
// text rules know, so there only the status found in the SDK's error type
// (openai-go's and anthropic-sdk-go's *Error.StatusCode, genai's
// APIError.Code, go-openai's *APIError.HTTPStatusCode) or, for
// langchaingo, the status its message prints can decide.
func TestRetryClassifiesSDKErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		step   func(proto fp.Protocol) fp.Step
		status int
		want   bool
	}{
		{"529 overloaded", func(fp.Protocol) fp.Step { return fp.Error(529) }, 529, true},
		{"503 unavailable", func(fp.Protocol) fp.Step { return fp.Error(503) }, 503, true},
		{"429 rate limit", func(fp.Protocol) fp.Step { return fp.Error(429) }, 429, true},
		{"400 bad request", func(fp.Protocol) fp.Step { return fp.Error(400) }, 400, false},
		{"529 nope", func(p fp.Protocol) fp.Step { return fp.Raw(529, neutralError(p, 529)) }, 529, true},
		{"500 nope", func(p fp.Protocol) fp.Step { return fp.Raw(500, neutralError(p, 500)) }, 500, true},
		{"502 nope", func(p fp.Protocol) fp.Step { return fp.Raw(502, neutralError(p, 502)) }, 502, true},
		{"501 nope", func(p fp.Protocol) fp.Step { return fp.Raw(501, neutralError(p, 501)) }, 501, false},
		{"408 nope", func(p fp.Protocol) fp.Step { return fp.Raw(408, neutralError(p, 408)) }, 408, true},
		{"422 nope", func(p fp.Protocol) fp.Step { return fp.Raw(422, neutralError(p, 422)) }, 422, false},
	}
	for _, sdk := range sdkCalls() {
		for _, tc := range tests {
			t.Run(sdk.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				srv := fp.New(tc.step(sdk.proto))
				defer srv.Close()
				err := sdk.call(t, srv)
				if err == nil {
					t.Fatal("the call succeeded, want the SDK's error")
				}
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("%s sent %d requests, want 1 (its own retries off)", sdk.name, n)
				}
				if got := retry.IsRetryable(err); got != tc.want {
					t.Errorf("IsRetryable(%T %q) = %v, want %v", err, err, got, tc.want)
				}
				if got, ok := retry.Status(err); got != tc.status || !ok {
					t.Errorf("Status(%T %q) = %d, %v, want %d, true", err, err, got, ok, tc.status)
				}
			})
		}
	}
}

// openai-go and anthropic-sdk-go keep the response in their *Error;
// retry honours its x-should-retry header as those SDKs do: a 503 the
// server says not to retry is not retryable, a 400 it says to retry is.
func TestRetryHonoursShouldRetryHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		header string
		want   bool
	}{
		{503, "false", false},
		{529, "false", false},
		{400, "true", true},
		{503, "", true},
	}
	for _, sdk := range sdkCalls()[:3] {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/%d x-should-retry=%q", sdk.name, tc.status, tc.header), func(t *testing.T) {
				t.Parallel()
				var h []string
				if tc.header != "" {
					h = []string{"x-should-retry", tc.header}
				}
				srv := fp.New(fp.Raw(tc.status, neutralError(sdk.proto, tc.status), h...))
				defer srv.Close()
				err := sdk.call(t, srv)
				if err == nil {
					t.Fatal("the call succeeded, want the SDK's error")
				}
				if got := retry.IsRetryable(err); got != tc.want {
					t.Errorf("IsRetryable(%T %q) = %v, want %v", err, err, got, tc.want)
				}
			})
		}
	}
}
