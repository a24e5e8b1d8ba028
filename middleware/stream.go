package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
)

// stream is the caller's streaming functions of one logical call, as a
// re-invoking middleware ([ToolArgValidation], [ToolCallLimit]) found them
// in the request. A nil *stream streams nothing.
type stream struct {
	text      func(ctx context.Context, chunk []byte) error
	reasoning func(ctx context.Context, reasoningChunk, chunk []byte) error
}

// streamOf returns nil when req streams nothing to the caller.
func streamOf(req *Request) *stream { return streamFrom(req.CallOptions()) }

// Attempt implements [guard.Stream]: an attempt whose streaming functions
// go through a [hold], holding back what hold says.
func (s *stream) Attempt(ctx context.Context, req *Request, hold guard.Hold) (context.Context, *Request, guard.Gate[*llms.ContentResponse]) {
	ctx, req, h := s.attempt(ctx, req, hold)
	return ctx, req, h
}

// Watch implements [guard.Stream]: the attempt's streaming functions count
// the chunks that reach the caller.
func (s *stream) Watch(ctx context.Context, req *Request) (*Request, func() bool) {
	w := &streamWatch{text: s.text, reasoning: s.reasoning, held: toolChunksHeld(ctx)}
	opts, chunks := w.options(req.Options)
	return &Request{Messages: req.Messages, Options: opts}, func() bool { return chunks.Load() > 0 }
}

// streamFrom is streamOf for options already applied.
func streamFrom(o llms.CallOptions) *stream {
	if o.StreamingFunc == nil && o.StreamingReasoningFunc == nil {
		return nil
	}
	return &stream{text: o.StreamingFunc, reasoning: o.StreamingReasoningFunc}
}

// attempt returns the context and request of one attempt whose streaming
// functions go through the returned hold, which holds back what what says:
// with [guard.HoldToolCalls] tool-call chunks (the context then tells
// [ModelRetry] inside that they never reached the caller), with
// [guard.HoldAll] every chunk but reasoning. On a nil s it returns ctx, req
// and a nil hold.
func (s *stream) attempt(ctx context.Context, req *Request, what guard.Hold) (context.Context, *Request, *hold) {
	if s == nil {
		return ctx, req, nil
	}
	h := &hold{s: s, all: what == guard.HoldAll}
	opts := make([]llms.CallOption, len(req.Options), len(req.Options)+2)
	copy(opts, req.Options)
	if s.text != nil {
		opts = append(opts, llms.WithStreamingFunc(h.onText))
	}
	if s.reasoning != nil {
		opts = append(opts, llms.WithStreamingReasoningFunc(h.onReasoning))
	}
	if !h.all {
		ctx = context.WithValue(ctx, toolChunksHeldKey{}, true)
	}
	return ctx, &Request{Messages: req.Messages, Options: opts}, h
}

// toolChunksHeldKey marks a context whose streamed tool-call chunks a
// middleware outside holds back from the caller.
type toolChunksHeldKey struct{}

// toolChunksHeld reports whether ctx is marked with toolChunksHeldKey.
func toolChunksHeld(ctx context.Context) bool {
	held, _ := ctx.Value(toolChunksHeldKey{}).(bool)
	return held
}

// hold sits between a provider (or an inner middleware) and the caller's
// streaming functions for one attempt of a stage that may re-ask, and is
// the attempt's [guard.Gate]. With all unset ([guard.HoldToolCalls]: the
// attempt's tool calls are checked), text reaches the caller at once and a
// tool-call delta is held back: all the hold keeps of it is that the
// attempt streamed tool calls, and an accepted attempt streams the
// response's final tool calls in their place. With all set
// ([guard.HoldAll]: the attempt's answer is checked), every chunk but
// reasoning waits until it is known whether the attempt is a final answer
// (then only the accepted answer is streamed) or a tool-calling turn (then
// the chunks are released as they came).
type hold struct {
	s   *stream
	all bool
	mu  sync.Mutex // providers may stream on another goroutine (Anthropic's client)
	// heldText and heldReasoning record that a chunk was held from the
	// text or the reasoning function.
	heldText, heldReasoning bool
	// chunks are the chunks held, in order, when all is set; reasoning
	// marks those from the reasoning function (their reasoning part was
	// passed on at once).
	chunks []heldChunk
}

type heldChunk struct {
	reasoning bool
	b         []byte
}

// keep records that chunk, from the reasoning function or the text one,
// was held, and keeps it when every chunk is.
func (h *hold) keep(reasoning bool, chunk []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if reasoning {
		h.heldReasoning = true
	} else {
		h.heldText = true
	}
	if h.all {
		h.chunks = append(h.chunks, heldChunk{reasoning: reasoning, b: append([]byte(nil), chunk...)})
	}
}

func (h *hold) onText(ctx context.Context, chunk []byte) error {
	if h.all || isToolCallChunk(chunk) {
		h.keep(false, chunk)
		return nil
	}
	return h.s.text(ctx, chunk)
}

// onReasoning passes reasoning on at once, and the chunk beside it unless
// it is held.
func (h *hold) onReasoning(ctx context.Context, reasoningChunk, chunk []byte) error {
	held := h.all || isToolCallChunk(chunk)
	if held && len(chunk) > 0 {
		h.keep(true, chunk)
	}
	if held {
		if len(reasoningChunk) == 0 {
			return nil
		}
		chunk = []byte{}
	}
	return h.s.reasoning(ctx, reasoningChunk, chunk)
}

// Deliver streams what h held for resp, the accepted response, and returns
// resp: with all unset, resp's tool calls, one chunk per call, to each
// function that had tool-call chunks held; with all set, the held chunks
// as they came when resp calls tools, else the accepted answer once to
// each function that had chunks held. A hold that held nothing streams
// nothing.
func (h *hold) Deliver(ctx context.Context, resp *llms.ContentResponse) (*llms.ContentResponse, error) {
	h.mu.Lock()
	text, reasoning, chunks := h.heldText, h.heldReasoning, h.chunks
	h.chunks = nil
	h.mu.Unlock()
	if !text && !reasoning {
		return resp, nil
	}
	calls := collectToolCalls(resp, 0)
	switch {
	case h.all && len(calls) > 0:
		for _, c := range chunks {
			if err := h.send(ctx, c.reasoning, c.b); err != nil {
				return nil, err
			}
		}
	case h.all:
		if err := h.sendEach(ctx, text, reasoning, []byte(resp.Choices[0].Content)); err != nil {
			return nil, err
		}
	default:
		for i := range calls {
			if err := h.sendEach(ctx, text, reasoning, toolCallChunk(&calls[i])); err != nil {
				return nil, err
			}
		}
	}
	return resp, nil
}

// sendEach streams chunk to the text function when text is set and to the
// reasoning function when reasoning is.
func (h *hold) sendEach(ctx context.Context, text, reasoning bool, chunk []byte) error {
	if text {
		if err := h.send(ctx, false, chunk); err != nil {
			return err
		}
	}
	if reasoning {
		return h.send(ctx, true, chunk)
	}
	return nil
}

// send streams chunk to the caller's reasoning function (as its
// non-reasoning part) or its text function.
func (h *hold) send(ctx context.Context, reasoning bool, chunk []byte) error {
	if reasoning {
		if err := h.s.reasoning(ctx, []byte{}, chunk); err != nil {
			return fmt.Errorf("middleware: streaming reasoning func returned an error: %w", err)
		}
		return nil
	}
	if err := h.s.text(ctx, chunk); err != nil {
		return fmt.Errorf("middleware: streaming func returned an error: %w", err)
	}
	return nil
}

// streamedToolCall has the shape, and the JSON field order, of the tool-call
// deltas langchaingo's OpenAI client streams (openaiclient.ToolCall).
type streamedToolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// toolCallChunk renders one whole tool call as a tool-call chunk: the first
// delta of a call in OpenAI's shape, carrying the complete arguments.
func toolCallChunk(c *toolCall) []byte {
	var tc streamedToolCall
	tc.ID, tc.Type = c.id, c.typ
	if tc.Type == "" {
		tc.Type = "function"
	}
	if c.fn != nil {
		tc.Function.Name, tc.Function.Arguments = c.fn.Name, c.fn.Arguments
	}
	b, err := json.Marshal([]streamedToolCall{tc})
	if err != nil { // strings only: cannot happen
		panic(fmt.Sprintf("middleware: marshal a tool call chunk: %v", err))
	}
	return b
}

// isToolCallChunk reports whether chunk is a tool-call delta as
// langchaingo's OpenAI client streams it: a JSON array of objects with a
// "type" and a "function" holding "name" and "arguments", and no other
// keys than "id", "type" and "function". The legacy function-call delta
// ({"name":…,"arguments":…}, for requests with Functions) counts too. Text
// never has this shape in practice: models stream text a few characters
// at a time.
func isToolCallChunk(chunk []byte) bool {
	chunk = bytes.TrimSpace(chunk)
	if len(chunk) < 2 {
		return false
	}
	switch chunk[0] {
	case '[':
		var deltas []map[string]json.RawMessage
		if json.Unmarshal(chunk, &deltas) != nil || len(deltas) == 0 {
			return false
		}
		for _, d := range deltas {
			if !isToolCallDelta(d) {
				return false
			}
		}
		return true
	case '{':
		var fn map[string]json.RawMessage
		return json.Unmarshal(chunk, &fn) == nil && isFunctionDelta(fn)
	}
	return false
}

func isToolCallDelta(d map[string]json.RawMessage) bool {
	for k := range d {
		if k != "id" && k != "type" && k != "function" {
			return false
		}
	}
	var typ string
	if json.Unmarshal(d["type"], &typ) != nil {
		return false
	}
	var fn map[string]json.RawMessage
	return json.Unmarshal(d["function"], &fn) == nil && isFunctionDelta(fn)
}

// isFunctionDelta reports whether fn is exactly {"name": string,
// "arguments": string}.
func isFunctionDelta(fn map[string]json.RawMessage) bool {
	if len(fn) != 2 {
		return false
	}
	var name, args string
	return json.Unmarshal(fn["name"], &name) == nil && json.Unmarshal(fn["arguments"], &args) == nil
}

// streamWatch holds the caller's streaming functions, so that each attempt
// can count the chunks it delivers to them.
type streamWatch struct {
	text      func(ctx context.Context, chunk []byte) error
	reasoning func(ctx context.Context, reasoningChunk, chunk []byte) error
	held      bool // tool-call chunks are held back from the caller (stream.go)
}

// reaches reports whether chunk reaches the caller.
func (w *streamWatch) reaches(chunk []byte) bool {
	return len(chunk) > 0 && !(w.held && isToolCallChunk(chunk))
}

// options returns a copy of opts followed by streaming functions that count
// the non-empty chunks of one attempt and forward them to the caller's.
func (w *streamWatch) options(opts []llms.CallOption) ([]llms.CallOption, *atomic.Int64) {
	chunks := new(atomic.Int64)
	out := make([]llms.CallOption, len(opts), len(opts)+2)
	copy(out, opts)
	if f := w.text; f != nil {
		out = append(out, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			if w.reaches(chunk) {
				chunks.Add(1)
			}
			return f(ctx, chunk)
		}))
	}
	if f := w.reasoning; f != nil {
		out = append(out, llms.WithStreamingReasoningFunc(func(ctx context.Context, reasoningChunk, chunk []byte) error {
			if len(reasoningChunk) > 0 || w.reaches(chunk) {
				chunks.Add(1)
			}
			return f(ctx, reasoningChunk, chunk)
		}))
	}
	return out, chunks
}
