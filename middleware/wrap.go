package middleware

import (
	"context"
	"errors"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
)

// Wrap returns an llms.Model that sends every GenerateContent call (and every
// deprecated Call) through mws, in [Chain] order, before it reaches model.
//
// The result drops into any code that takes an llms.Model, langchaingo's
// agents and chains included. When model implements llms.ReasoningModel, so
// does the result. The returned model is safe for concurrent use if model
// and mws are.
func Wrap(model llms.Model, mws ...Middleware) llms.Model {
	if model == nil {
		panic("middleware: Wrap called with a nil model")
	}
	w := &wrapped{model: model}
	w.handler = Chain(mws...).WrapModelCall(w.call)
	if rm, ok := model.(llms.ReasoningModel); ok {
		return &reasoningWrapped{wrapped: w, rm: rm}
	}
	return w
}

type wrapped struct {
	model   llms.Model
	handler Handler
}

func (w *wrapped) call(ctx context.Context, req *Request) (*llms.ContentResponse, error) {
	if guard.ObserverFrom(ctx) == nil {
		resp, err := w.model.GenerateContent(ctx, req.Messages, req.Options...)
		if err == nil && resp == nil {
			err = errNilResponse
		}
		return resp, err
	}
	ctx, done := guard.ObserveModelCall(ctx, guard.ModelCall{Model: req.CallOptions().Model})
	resp, err := w.model.GenerateContent(ctx, req.Messages, req.Options...)
	if err == nil && resp == nil {
		err = errNilResponse
	}
	done(modelResult(ctx, resp, err))
	return resp, err
}

var errNilResponse = errors.New("middleware: model returned a nil response and a nil error")

// GenerateContent runs the middleware chain and then the wrapped model.
func (w *wrapped) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	return w.handler(ctx, newRequest(messages, options))
}

// Call sends prompt as a single human message through GenerateContent, so the
// middlewares see it too.
func (w *wrapped) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, w, prompt, options...)
}

// Unwrap returns the wrapped model.
func (w *wrapped) Unwrap() llms.Model { return w.model }

type reasoningWrapped struct {
	*wrapped
	rm llms.ReasoningModel
}

// SupportsReasoning forwards to the wrapped model.
func (r *reasoningWrapped) SupportsReasoning() bool { return r.rm.SupportsReasoning() }
