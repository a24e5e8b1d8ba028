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

// Attempt implements [guard.Stream]: with [guard.HoldToolCalls] an attempt
// whose tool-call chunks wait in a [streamGate], with [guard.HoldAll] one
// whose text waits in an [answerHold].
func (s *stream) Attempt(ctx context.Context, req *Request, hold guard.Hold) (context.Context, *Request, guard.Gate[*llms.ContentResponse]) {
	if hold == guard.HoldAll {
		ctx, req, h := s.hold(ctx, req)
		return ctx, req, h
	}
	ctx, req, g := s.attempt(ctx, req)
	return ctx, req, g
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

// attempt returns the context and request of one attempt, whose streaming
// functions pass text through at once and hold tool-call chunks in g, and
// g. The context tells [ModelRetry] inside that tool-call chunks are held
// (so they never reached the caller). On a nil s it returns ctx, req and a
// nil gate.
func (s *stream) attempt(ctx context.Context, req *Request) (context.Context, *Request, *streamGate) {
	if s == nil {
		return ctx, req, nil
	}
	g := &streamGate{s: s}
	opts := make([]llms.CallOption, len(req.Options), len(req.Options)+2)
	copy(opts, req.Options)
	if s.text != nil {
		opts = append(opts, llms.WithStreamingFunc(g.onText))
	}
	if s.reasoning != nil {
		opts = append(opts, llms.WithStreamingReasoningFunc(g.onReasoning))
	}
	return context.WithValue(ctx, toolChunksHeldKey{}, true), &Request{Messages: req.Messages, Options: opts}, g
}

// toolChunksHeldKey marks a context whose streamed tool-call chunks a
// middleware outside holds back from the caller.
type toolChunksHeldKey struct{}

// toolChunksHeld reports whether ctx is marked with toolChunksHeldKey.
func toolChunksHeld(ctx context.Context) bool {
	held, _ := ctx.Value(toolChunksHeldKey{}).(bool)
	return held
}

// streamGate sits between a provider (or an inner middleware) and the
// caller's streaming functions for one attempt. Text reaches the caller at
// once; a chunk that is a tool-call delta is held back, and all the gate
// keeps of it is that the attempt streamed tool calls. When the attempt is
// accepted, [streamGate.deliver] streams the response's final tool calls in
// place of the held deltas.
type streamGate struct {
	s *stream
	// heldText and heldReasoning record that a tool-call chunk was held
	// from the text or the reasoning function. Providers call them on
	// another goroutine than the one that delivers (Anthropic's client).
	heldText, heldReasoning atomic.Bool
}

func (g *streamGate) onText(ctx context.Context, chunk []byte) error {
	if isToolCallChunk(chunk) {
		g.heldText.Store(true)
		return nil
	}
	return g.s.text(ctx, chunk)
}

func (g *streamGate) onReasoning(ctx context.Context, reasoningChunk, chunk []byte) error {
	if isToolCallChunk(chunk) {
		g.heldReasoning.Store(true)
		if len(reasoningChunk) == 0 {
			return nil
		}
		chunk = []byte{}
	}
	return g.s.reasoning(ctx, reasoningChunk, chunk)
}

// Deliver streams the tool calls of the accepted response resp to the
// functions that had tool-call chunks held back, one chunk per call, and
// returns resp. A gate that held nothing streams nothing.
func (g *streamGate) Deliver(ctx context.Context, resp *llms.ContentResponse) (*llms.ContentResponse, error) {
	if !g.heldText.Load() && !g.heldReasoning.Load() {
		return resp, nil
	}
	calls := collectToolCalls(resp, 0)
	for i := range calls {
		chunk := toolCallChunk(&calls[i])
		if g.heldText.Load() {
			if err := g.s.text(ctx, chunk); err != nil {
				return nil, fmt.Errorf("middleware: streaming func returned an error: %w", err)
			}
		}
		if g.heldReasoning.Load() {
			if err := g.s.reasoning(ctx, []byte{}, chunk); err != nil {
				return nil, fmt.Errorf("middleware: streaming reasoning func returned an error: %w", err)
			}
		}
	}
	return resp, nil
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

// hold returns the context and request of one attempt of OutputValidation,
// whose streaming functions hold every text chunk in the returned hold,
// and the hold. Reasoning passes through at once. On a nil s it returns
// ctx, req and a nil hold.
func (s *stream) hold(ctx context.Context, req *Request) (context.Context, *Request, *answerHold) {
	if s == nil {
		return ctx, req, nil
	}
	h := &answerHold{s: s}
	opts := make([]llms.CallOption, len(req.Options), len(req.Options)+2)
	copy(opts, req.Options)
	if s.text != nil {
		opts = append(opts, llms.WithStreamingFunc(h.onText))
	}
	if s.reasoning != nil {
		opts = append(opts, llms.WithStreamingReasoningFunc(h.onReasoning))
	}
	return ctx, &Request{Messages: req.Messages, Options: opts}, h
}

// answerHold keeps the text chunks of one attempt until it is known
// whether the attempt is a final answer (then only the accepted answer is
// streamed) or a tool-calling turn (then the chunks are released).
type answerHold struct {
	s  *stream
	mu sync.Mutex // providers may stream on another goroutine
	// chunks held, in order; reasoning marks those from the reasoning
	// function (their reasoning part was passed on at once).
	chunks []heldChunk
	text   bool // the text function had chunks
	reason bool // the reasoning function had non-reasoning chunks
}

type heldChunk struct {
	reasoning bool
	b         []byte
}

func (h *answerHold) onText(_ context.Context, chunk []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chunks = append(h.chunks, heldChunk{b: append([]byte(nil), chunk...)})
	h.text = true
	return nil
}

func (h *answerHold) onReasoning(ctx context.Context, reasoningChunk, chunk []byte) error {
	if len(chunk) > 0 {
		h.mu.Lock()
		h.chunks = append(h.chunks, heldChunk{reasoning: true, b: append([]byte(nil), chunk...)})
		h.reason = true
		h.mu.Unlock()
	}
	if len(reasoningChunk) == 0 {
		return nil
	}
	return h.s.reasoning(ctx, reasoningChunk, []byte{})
}

// Deliver streams what h held for resp: the held chunks as they came when
// resp calls tools, else the accepted answer once.
func (h *answerHold) Deliver(ctx context.Context, resp *llms.ContentResponse) (*llms.ContentResponse, error) {
	if len(collectToolCalls(resp, 0)) > 0 {
		return h.release(ctx, resp)
	}
	return h.answer(ctx, resp)
}

// release streams the held chunks as they came, and returns resp.
func (h *answerHold) release(ctx context.Context, resp *llms.ContentResponse) (*llms.ContentResponse, error) {
	if h == nil {
		return resp, nil
	}
	h.mu.Lock()
	chunks := h.chunks
	h.chunks = nil
	h.mu.Unlock()
	for _, c := range chunks {
		var err error
		if c.reasoning {
			err = h.s.reasoning(ctx, []byte{}, c.b)
		} else {
			err = h.s.text(ctx, c.b)
		}
		if err != nil {
			return nil, fmt.Errorf("middleware: streaming func returned an error: %w", err)
		}
	}
	return resp, nil
}

// answer streams the accepted answer of resp, once, to each function that
// had chunks held, and returns resp.
func (h *answerHold) answer(ctx context.Context, resp *llms.ContentResponse) (*llms.ContentResponse, error) {
	if h == nil {
		return resp, nil
	}
	h.mu.Lock()
	text, reason := h.text, h.reason
	h.chunks = nil
	h.mu.Unlock()
	answer := []byte(resp.Choices[0].Content)
	if text {
		if err := h.s.text(ctx, answer); err != nil {
			return nil, fmt.Errorf("middleware: streaming func returned an error: %w", err)
		}
	}
	if reason {
		if err := h.s.reasoning(ctx, []byte{}, answer); err != nil {
			return nil, fmt.Errorf("middleware: streaming reasoning func returned an error: %w", err)
		}
	}
	return resp, nil
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
