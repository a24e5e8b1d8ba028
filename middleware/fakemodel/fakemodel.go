// Package fakemodel provides a scripted tool-calling llms.Model for tests, in
// the spirit of net/http/httptest: write the model's turns as a literal, run
// your agent or middleware against it offline, then inspect what the model
// was sent.
//
//	m := fakemodel.New(
//		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": 42}`)),
//		fakemodel.ToolCalls(fakemodel.Call("get_weather", `{"city": "Paris"}`)),
//		fakemodel.Text("It is sunny in Paris."),
//	)
//
// Each GenerateContent call consumes the next step. Running past the script
// returns [ErrExhausted]. fakemodel imports only langchaingo's llms package.
package fakemodel

import (
	"context"
	"errors"
	"strconv"
	"sync"

	"github.com/tmc/langchaingo/llms"
)

// ErrExhausted is returned by a [Model] called more times than it has steps.
var ErrExhausted = errors.New("fakemodel: script exhausted: the model was called more times than it has steps")

// Request is what one GenerateContent call received: its messages and its
// options applied to a zero llms.CallOptions.
type Request struct {
	Messages []llms.MessageContent
	Options  llms.CallOptions
}

// Step is one scripted model turn. Build steps with [Text], [ToolCalls],
// [Response], [Fail] and [Func].
type Step struct {
	run func(ctx context.Context, m *Model, req Request) (*llms.ContentResponse, error)
}

// Model is a scripted llms.Model. It is safe for concurrent use: concurrent
// calls take the steps in the order they acquire the model's lock.
type Model struct {
	mu       sync.Mutex
	steps    []Step
	next     int
	ids      int
	requests []Request
}

// New returns a [Model] that answers its calls with steps, in order.
func New(steps ...Step) *Model {
	return &Model{steps: append([]Step(nil), steps...)}
}

// Append adds steps to the end of the script.
func (m *Model) Append(steps ...Step) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steps = append(m.steps, steps...)
}

// Requests returns a copy of what each call received, in call order. Calls
// made with an already cancelled context are not recorded.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// Remaining returns the number of steps not yet consumed.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.steps) - m.next
}

// GenerateContent records the request and answers with the next step. If ctx
// is already done it returns ctx.Err() without consuming a step.
func (m *Model) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts llms.CallOptions
	for _, o := range options {
		if o != nil {
			o(&opts)
		}
	}
	req := Request{Messages: cloneMessages(messages), Options: opts}

	m.mu.Lock()
	m.requests = append(m.requests, req)
	if m.next >= len(m.steps) {
		m.mu.Unlock()
		return nil, ErrExhausted
	}
	step := m.steps[m.next]
	m.next++
	m.mu.Unlock()

	return step.run(ctx, m, req)
}

// Call answers a single human message through GenerateContent.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// nextID returns the model's next tool call id: call_1, call_2, ...
func (m *Model) nextID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ids++
	return "call_" + strconv.Itoa(m.ids)
}

// Text answers with one choice holding s and no tool calls. When the caller
// set llms.WithStreamingFunc, s is streamed to it as one chunk first.
func Text(s string) Step {
	return Step{run: func(ctx context.Context, _ *Model, req Request) (*llms.ContentResponse, error) {
		if f := req.Options.StreamingFunc; f != nil && s != "" {
			if err := f(ctx, []byte(s)); err != nil {
				return nil, err
			}
		}
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: s, StopReason: "stop"}}}, nil
	}}
}

// ToolCalls answers with one choice holding calls, the way OpenAI does: the
// legacy FuncCall field points at the first call's function. Calls without an
// id get the model's next id (call_1, call_2, ...); use [Response] to send calls
// without ids.
func ToolCalls(calls ...llms.ToolCall) Step {
	return Step{run: func(_ context.Context, m *Model, _ Request) (*llms.ContentResponse, error) {
		ch := &llms.ContentChoice{StopReason: "tool_calls", ToolCalls: cloneToolCalls(calls)}
		for i := range ch.ToolCalls {
			if ch.ToolCalls[i].ID == "" {
				ch.ToolCalls[i].ID = m.nextID()
			}
		}
		if len(ch.ToolCalls) > 0 {
			ch.FuncCall = ch.ToolCalls[0].FunctionCall
		}
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{ch}}, nil
	}}
}

// Call returns a function tool call of name with the given raw arguments
// (not checked: send broken JSON on purpose if you like) and no id.
func Call(name, argsJSON string) llms.ToolCall {
	return llms.ToolCall{Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: argsJSON}}
}

// Response answers with a deep copy of resp, exactly as given: several
// choices (as Anthropic returns one per content block), calls without ids, a
// nil FunctionCall, and so on.
func Response(resp *llms.ContentResponse) Step {
	return Step{run: func(context.Context, *Model, Request) (*llms.ContentResponse, error) {
		return cloneResponse(resp), nil
	}}
}

// Fail answers with err.
func Fail(err error) Step {
	return Step{run: func(context.Context, *Model, Request) (*llms.ContentResponse, error) {
		return nil, err
	}}
}

// Func answers with whatever fn returns, for anything the other steps cannot
// express. msgs and opts are the step's own copies.
func Func(fn func(ctx context.Context, msgs []llms.MessageContent, opts llms.CallOptions) (*llms.ContentResponse, error)) Step {
	return Step{run: func(ctx context.Context, _ *Model, req Request) (*llms.ContentResponse, error) {
		return fn(ctx, cloneMessages(req.Messages), req.Options)
	}}
}

func cloneMessages(msgs []llms.MessageContent) []llms.MessageContent {
	if msgs == nil {
		return nil
	}
	out := make([]llms.MessageContent, len(msgs))
	for i, mc := range msgs {
		out[i].Role = mc.Role
		if mc.Parts == nil {
			continue
		}
		out[i].Parts = make([]llms.ContentPart, len(mc.Parts))
		for j, p := range mc.Parts {
			if tc, ok := p.(llms.ToolCall); ok {
				p = cloneToolCall(tc)
			}
			out[i].Parts[j] = p
		}
	}
	return out
}

func cloneToolCall(tc llms.ToolCall) llms.ToolCall {
	if tc.FunctionCall != nil {
		fn := *tc.FunctionCall
		tc.FunctionCall = &fn
	}
	return tc
}

func cloneToolCalls(calls []llms.ToolCall) []llms.ToolCall {
	if calls == nil {
		return nil
	}
	out := make([]llms.ToolCall, len(calls))
	for i, tc := range calls {
		out[i] = cloneToolCall(tc)
	}
	return out
}

func cloneResponse(resp *llms.ContentResponse) *llms.ContentResponse {
	if resp == nil {
		return nil
	}
	out := &llms.ContentResponse{}
	if resp.Choices != nil {
		out.Choices = make([]*llms.ContentChoice, len(resp.Choices))
	}
	for i, ch := range resp.Choices {
		if ch == nil {
			continue
		}
		c := *ch
		c.ToolCalls = cloneToolCalls(ch.ToolCalls)
		if ch.FuncCall != nil {
			fn := *ch.FuncCall
			c.FuncCall = &fn
			// Keep the OpenAI-style aliasing of FuncCall and the first call.
			if len(ch.ToolCalls) > 0 && ch.ToolCalls[0].FunctionCall == ch.FuncCall {
				c.FuncCall = c.ToolCalls[0].FunctionCall
			}
		}
		if ch.GenerationInfo != nil {
			c.GenerationInfo = make(map[string]any, len(ch.GenerationInfo))
			for k, v := range ch.GenerationInfo {
				c.GenerationInfo[k] = v
			}
		}
		out.Choices[i] = &c
	}
	return out
}
