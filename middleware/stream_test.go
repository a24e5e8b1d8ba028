package middleware_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// streams is a fake model step that streams chunks to the request's
// streaming functions (to the text one as is; to the reasoning one as
// (reasoning, chunk) pairs split at "|") and answers resp.
func streams(resp *llms.ContentResponse, chunks ...string) fakemodel.Step {
	return fakemodel.Func(func(ctx context.Context, _ []llms.MessageContent, o llms.CallOptions) (*llms.ContentResponse, error) {
		for _, c := range chunks {
			if o.StreamingFunc != nil {
				if err := o.StreamingFunc(ctx, []byte(c)); err != nil {
					return nil, err
				}
			}
			if o.StreamingReasoningFunc != nil {
				if err := o.StreamingReasoningFunc(ctx, []byte("r:"+c), []byte(c)); err != nil {
					return nil, err
				}
			}
		}
		return resp, nil
	})
}

func callResp(id, args string) *llms.ContentResponse {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{
		{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_weather", Arguments: args}}}}}}
}

const (
	deltaStart = `[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":""}}]`
	deltaArgs  = `[{"type":"","function":{"name":"","arguments":"{\"city\": \"Paris\"}"}}]`
	legacyFn   = `{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}`
	flushed    = `[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]`
)

// TestStreamGateRecognisesToolCallChunks: only chunks shaped exactly as
// langchaingo's OpenAI client streams tool-call (or legacy function-call)
// deltas are held; text that merely looks like JSON passes at once.
func TestStreamGateRecognisesToolCallChunks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"tool-call deltas held, the call flushed whole", []string{"Hi", deltaStart, deltaArgs, ""}, []string{"Hi", "", flushed}},
		{"legacy function-call delta held", []string{legacyFn}, []string{flushed}},
		{"JSON text passes", []string{`[1,2]`, `{"name":"x"}`, `[{"function":{"name":"a","arguments":"b"}}]`, `[{"type":"function","function":{"name":"a"}}]`, `[]`, `[{"type":"function","function":{"name":"a","arguments":"b"},"index":0}]`},
			[]string{`[1,2]`, `{"name":"x"}`, `[{"function":{"name":"a","arguments":"b"}}]`, `[{"type":"function","function":{"name":"a"}}]`, `[]`, `[{"type":"function","function":{"name":"a","arguments":"b"},"index":0}]`}},
		{"text only: nothing flushed", []string{"[", "{", "not json"}, []string{"[", "{", "not json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			m := fakemodel.New(streams(callResp("c1", `{"city": "Paris"}`), tc.chunks...))
			_, err := middleware.Wrap(m, middleware.ToolArgValidation()).GenerateContent(context.Background(), question,
				llms.WithTools([]llms.Tool{weatherTool}),
				llms.WithStreamingFunc(func(_ context.Context, c []byte) error { got = append(got, string(c)); return nil }))
			if err != nil {
				t.Fatal(err)
			}
			// A text-only stream with a tool call in the response: the
			// response's call is not streamed, as the provider did not.
			if !slices.Equal(got, tc.want) {
				t.Errorf("streamed %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStreamGateReasoningFunc: the reasoning function gets its reasoning
// at once, tool-call chunks held (the reasoning part kept), and the
// accepted call flushed as (empty reasoning, call).
func TestStreamGateReasoningFunc(t *testing.T) {
	t.Parallel()
	var got []string
	m := fakemodel.New(
		streams(callResp("c0", `{"city": 1}`), "Hm", deltaStart),
		streams(callResp("c1", `{"city": "Paris"}`), "Ok", deltaStart, deltaArgs),
	)
	_, err := middleware.Wrap(m, middleware.ToolArgValidation()).GenerateContent(context.Background(), question,
		llms.WithTools([]llms.Tool{weatherTool}),
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, c []byte) error {
			got = append(got, string(r)+"|"+string(c))
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"r:Hm|Hm", "r:" + deltaStart + "|", "r:Ok|Ok", "r:" + deltaStart + "|", "r:" + deltaArgs + "|", "|" + flushed}
	if !slices.Equal(got, want) {
		t.Errorf("reasoning stream = %q, want %q", got, want)
	}
}

// TestStreamGateFlushError: an error from the caller's streaming function
// while the accepted call is flushed fails the call, wrapped.
func TestStreamGateFlushError(t *testing.T) {
	t.Parallel()
	stop := errors.New("client went away")
	m := fakemodel.New(streams(callResp("c1", `{"city": "Paris"}`), deltaStart, deltaArgs))
	_, err := middleware.Wrap(m, middleware.ToolArgValidation()).GenerateContent(context.Background(), question,
		llms.WithTools([]llms.Tool{weatherTool}),
		llms.WithStreamingFunc(func(_ context.Context, c []byte) error {
			if len(c) > 0 {
				return stop
			}
			return nil
		}))
	if !errors.Is(err, stop) {
		t.Errorf("GenerateContent() error = %v, want it to wrap %v", err, stop)
	}
}
