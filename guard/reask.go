package guard

import "context"

// turn is what a re-asking stage made of one attempt's answer ([reask]):
// the response and error to hand on, or the next attempt.
type turn[Req, Resp any] struct {
	resp Resp
	err  error
	// again, when not nil, builds the request of the next attempt: the
	// stage re-asks. It is called only while the logical call's context
	// is live.
	again func() (Req, error)
}

// reask runs one logical call of a stage that re-asks the model —
// [ToolArgValidation], [OutputValidation], [ToolCallLimit]'s
// [ExitContinue] — and is this package's one loop of re-asks: each
// attempt's request goes to next through a gate of its own on st (none when
// the request streams nothing), holding back what hold says; judge decides
// what becomes of the attempt's answer (resp and err as next returned
// them): handed on (judge delivers it through gate, or refuses it) or asked
// again with the request judge's turn builds. A re-ask never starts once
// ctx is done.
func reask[Req, Resp any](ctx context.Context, st Stream[Req, Resp], hold Hold, next Handler[Req, Resp], req Req,
	judge func(attempt int, gate Gate[Resp], resp Resp, err error) turn[Req, Resp]) (Resp, error) {
	var zero Resp
	attemptReq := req
	for attempt := 1; ; attempt++ {
		attemptCtx, streamReq, gate := attemptStream(ctx, st, attemptReq, hold)
		resp, err := next(attemptCtx, streamReq)
		t := judge(attempt, gate, resp, err)
		if t.again == nil {
			return t.resp, t.err
		}
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		if attemptReq, err = t.again(); err != nil {
			return zero, err
		}
	}
}

// attemptStream returns the context, request and gate of one attempt of a
// re-asking stage: st's attempt, or ctx, req and no gate when the request
// streams nothing.
func attemptStream[Req, Resp any](ctx context.Context, st Stream[Req, Resp], req Req, hold Hold) (context.Context, Req, Gate[Resp]) {
	if st == nil {
		return ctx, req, nil
	}
	return st.Attempt(ctx, req, hold)
}

// deliver hands resp to gate, when there is one.
func deliver[Resp any](ctx context.Context, gate Gate[Resp], resp Resp) (Resp, error) {
	if gate == nil {
		return resp, nil
	}
	return gate.Deliver(ctx, resp)
}
