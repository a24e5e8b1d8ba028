package middleware_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/retry"
)

// The provider's error texts, verbatim (full stops included).
var (
	//lint:ignore ST1005 verbatim provider error text
	err401 = errors.New("API returned unexpected status code: 401: Incorrect API key provided: sk-abc.")
	//lint:ignore ST1005 verbatim provider error text
	err429 = errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.")
	err503 = errors.New("API returned unexpected status code: 503: The engine is currently overloaded, please try again later")
)

func retryQuestion() []llms.MessageContent {
	return []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "What is the weather in Paris?")}
}

// sleepRecorder replaces ModelRetry's wait: it records the waits asked for
// and returns at once.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, d)
	return ctx.Err()
}

func text(t *testing.T, resp *llms.ContentResponse) string {
	t.Helper()
	if resp == nil || len(resp.Choices) == 0 {
		t.Fatalf("response = %v, want one choice", resp)
	}
	return resp.Choices[0].Content
}

func asRetryError(t *testing.T, err error) *retry.Error {
	t.Helper()
	var re *retry.Error
	if !errors.As(err, &re) {
		t.Fatalf("err = %v (%T), want a *retry.Error", err, err)
	}
	return re
}

// ModelRetry's own behaviour is tested in package guard, over a test codec;
// what remains here is the adapter's part of it: langchaingo's streaming
// functions, watched by the codec's stream.

// streamSink collects what a caller's streaming function receives.
type streamSink struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *streamSink) text(_ context.Context, chunk []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(chunk)
	return nil
}

func (s *streamSink) reasoning(_ context.Context, reasoningChunk, chunk []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(reasoningChunk)
	s.b.Write(chunk)
	return nil
}

func (s *streamSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestModelRetryStreaming: an attempt that streamed anything through the
// caller's StreamingFunc or StreamingReasoningFunc is not retried, one that
// streamed nothing or empty chunks is, and the caller's options slice is
// never written.
func TestModelRetryStreaming(t *testing.T) {
	t.Parallel()
	reasonThenFail := fakemodel.Func(func(ctx context.Context, _ []llms.MessageContent, o llms.CallOptions) (*llms.ContentResponse, error) {
		if o.StreamingReasoningFunc != nil {
			if err := o.StreamingReasoningFunc(ctx, []byte("thinking…"), nil); err != nil {
				return nil, err
			}
		}
		return nil, err503
	})
	tests := []struct {
		name         string
		steps        []fakemodel.Step
		reasoning    bool // stream through WithStreamingReasoningFunc instead
		opts         []guard.RetryOption
		wantCalls    int
		wantStreamed string
		wantErr      bool
	}{
		{
			name:         "streamed then failed: not replayed",
			steps:        []fakemodel.Step{fakemodel.StreamThenFail(err503, "Hel", "lo"), fakemodel.Text("Hello, Paris!")},
			wantCalls:    1,
			wantStreamed: "Hello",
			wantErr:      true,
		},
		{
			name:         "failed before streaming: retried",
			steps:        []fakemodel.Step{fakemodel.StreamThenFail(err503), fakemodel.Text("Hello, Paris!")},
			wantCalls:    2,
			wantStreamed: "Hello, Paris!",
		},
		{
			name:         "empty chunks only: retried",
			steps:        []fakemodel.Step{fakemodel.StreamThenFail(err503, ""), fakemodel.Text("Hello, Paris!")},
			wantCalls:    2,
			wantStreamed: "Hello, Paris!",
		},
		{
			name:         "WithRetryStreamed: replayed",
			steps:        []fakemodel.Step{fakemodel.StreamThenFail(err503, "Hel", "lo"), fakemodel.Text("Hello, Paris!")},
			opts:         []guard.RetryOption{guard.WithRetryStreamed()},
			wantCalls:    2,
			wantStreamed: "HelloHello, Paris!",
		},
		{
			name:         "reasoning streamed then failed: not replayed",
			steps:        []fakemodel.Step{reasonThenFail, fakemodel.Text("never")},
			reasoning:    true,
			wantCalls:    1,
			wantStreamed: "thinking…",
			wantErr:      true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := fakemodel.New(tc.steps...)
			var sink streamSink
			var sleeps sleepRecorder
			opts := append([]guard.RetryOption{guard.WithSleep(sleeps.sleep)}, tc.opts...)
			llm := middleware.Wrap(model, middleware.ModelRetry(opts...))

			// Spare capacity: an append by ModelRetry would write into it.
			callOpts := make([]llms.CallOption, 1, 8)
			callOpts[0] = llms.WithStreamingFunc(sink.text)
			if tc.reasoning {
				callOpts[0] = llms.WithStreamingReasoningFunc(sink.reasoning)
			}
			resp, err := llm.GenerateContent(context.Background(), retryQuestion(), callOpts...)

			if got := len(model.Requests()); got != tc.wantCalls {
				t.Errorf("model calls = %d, want %d", got, tc.wantCalls)
			}
			if got := sink.String(); got != tc.wantStreamed {
				t.Errorf("streamed %q, want %q", got, tc.wantStreamed)
			}
			if tc.wantErr {
				if !errors.Is(err, err503) {
					t.Errorf("error = %v, want the 503", err)
				}
				if re := asRetryError(t, err); re.Attempts != 1 {
					t.Errorf("Attempts = %d, want 1", re.Attempts)
				}
			} else if err != nil || text(t, resp) != "Hello, Paris!" {
				t.Errorf("GenerateContent() = %v, %v, want %q", resp, err, "Hello, Paris!")
			}
			for i, o := range callOpts[1:cap(callOpts)] {
				if o != nil {
					t.Errorf("caller's options slice written at index %d, want it untouched", i+1)
				}
			}
		})
	}
}
