package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/toolguard/toolguard/guard"
)

// Observing calls: each tools/call is told to the RunObservers of the
// request's context (guard.ObserveToolCall), so that otelguard's observer
// makes an execute_tool span of it, and the transport's events become span
// events on it and points of otelguard's events counter.

// errUnknownTool is the outcome of a call refused because the server does
// not list its tool.
var errUnknownTool = errors.New("mcpguard: the server does not list the tool")

// WithObserver makes the transport report to o, as well as to the
// observers the request's context carries ([guard.WithObserver]): each
// tools/call as a tool execution ([guard.RunObserver], otelguard's
// "execute_tool {name}" span, ended when its response has been read or
// closed, with error.type when the transport refused the call or its
// result, or the server answered with an HTTP error), and every event
// ([guard.Observer]: otelguard's toolguard.events counter and span
// events). For a program whose requests' contexts do not carry it, as a
// proxy's do not. o must not be nil.
func WithObserver(o guard.Observer) Option {
	if o == nil {
		panic("mcpguard: WithObserver(nil)")
	}
	return optionFunc(func(c *config) { c.observer = o })
}

// outcome is what became of one tools/call, set where the transport
// refuses it or its result.
type outcome struct {
	mu    sync.Mutex
	cause error
}

type outcomeKey struct{}

// outcomeOf returns the outcome of the call of ctx (nil outside a call).
func outcomeOf(ctx context.Context) *outcome {
	o, _ := ctx.Value(outcomeKey{}).(*outcome)
	return o
}

func (o *outcome) set(err error) {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.cause = err
	o.mu.Unlock()
}

func (o *outcome) get() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cause
}

// answer returns the transport's own answer to the call id of r: an
// isError result whose text is text, given for cause.
func (t *transport) answer(r *http.Request, id []byte, text string, cause error) *http.Response {
	outcomeOf(r.Context()).set(cause)
	return respond(r, http.StatusOK, toolError(id, text))
}

// observed hands on the response to a call, calling end once with its
// outcome when the body has been read to its end or closed (at once on an
// error).
func observed(resp *http.Response, err error, o *outcome, end func(string, error)) (*http.Response, error) {
	if err != nil {
		end("", err)
		return resp, err
	}
	resp.Body = &endOnClose{ReadCloser: resp.Body, end: func() {
		cause := o.get()
		if cause == nil && resp.StatusCode/100 != 2 {
			cause = fmt.Errorf("mcpguard: the server answered the call with HTTP %d", resp.StatusCode)
		}
		end("", cause)
	}}
	return resp, nil
}

// endOnClose calls end once, at EOF or Close, whichever comes first.
type endOnClose struct {
	io.ReadCloser
	once sync.Once
	end  func()
}

func (b *endOnClose) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.end)
	}
	return n, err
}

func (b *endOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.end)
	return err
}
