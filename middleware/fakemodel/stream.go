package fakemodel

import (
	"context"

	"github.com/tmc/langchaingo/llms"
)

// StreamThenFail answers like a provider whose connection breaks in the
// middle of a streamed answer: when the caller set llms.WithStreamingFunc,
// each chunk is sent to it in order, then the step fails with err. Without a
// streaming function it just fails. An error from the streaming function
// ends the step with that error, as langchaingo's providers do.
func StreamThenFail(err error, chunks ...string) Step {
	chunks = append([]string(nil), chunks...)
	return Step{run: func(ctx context.Context, _ *Model, req Request) (*llms.ContentResponse, error) {
		if f := req.Options.StreamingFunc; f != nil {
			for _, c := range chunks {
				if ferr := f(ctx, []byte(c)); ferr != nil {
					return nil, ferr
				}
			}
		}
		return nil, err
	}}
}
