package mcpguard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/validation"
)

// call guards one tools/call request: body is the whole message, m its
// decoding. The call is told to the observers of the request's context
// ([guard.ObserveToolCall]: otelguard's execute_tool span) from here until
// its response is read or closed.
func (t *transport) call(r *http.Request, body []byte, m message) (*http.Response, error) {
	p, err := decodeCallParams(m.params.value)
	if err != nil {
		var dup *duplicateKeyError
		if errors.As(err, &dup) {
			return t.refuseOrPass(r, body, m.id, "", fmt.Errorf("mcpguard: the params of a tools/call give %w", err))
		}
		return t.pass(r, body) // params the server refuses itself
	}
	if guard.ObserverFrom(r.Context()) == nil {
		return t.guardCall(r, body, m, p) // nobody to tell: no outcome to keep
	}
	ctx, end := guard.ObserveToolCall(r.Context(), guard.Call{ID: idText(m.id), Name: p.name, Args: p.arguments.value})
	o := &outcome{}
	r = r.WithContext(context.WithValue(ctx, outcomeKey{}, o))
	resp, err := t.guardCall(r, body, m, p)
	return observed(resp, err, o, end)
}

// guardCall is call once the call's params are read.
func (t *transport) guardCall(r *http.Request, body []byte, m message, p callParams) (*http.Response, error) {
	ctx := r.Context()
	k := keyOf(r)
	callID := idText(m.id)
	ts, names, err := t.lookup(r, k, p.name, p.meta)
	if err != nil {
		reason := fmt.Errorf("mcpguard: the tools of the server could not be listed: %w", err)
		t.emitFailOpen(ctx, guard.Event{Kind: guard.EventUnguarded, Tool: p.name, CallID: callID, Err: reason})
		if t.cfg.failClosed {
			return t.answer(r, m.id, notExecuted(p.name, reason), reason), nil
		}
		return t.passCall(r, k, body, m.id, p, nil)
	}
	if ts == nil {
		t.emit(ctx, guard.Event{Kind: guard.EventUnknownTool, Tool: p.name, CallID: callID})
		if t.cfg.failClosed {
			return t.answer(r, m.id, errfmt.UnknownTool(p.name, names), errUnknownTool), nil
		}
		return t.passCall(r, k, body, m.id, p, nil) // the server says it has no such tool
	}
	in, out, err := t.compile(ts)
	if err != nil {
		t.emitFailOpen(ctx, guard.Event{Kind: guard.EventSchemaError, Tool: p.name, CallID: callID, Err: err})
		if t.cfg.failClosed {
			return t.answer(r, m.id, notExecuted(p.name, err), err), nil
		}
		return t.passCall(r, k, body, m.id, p, ts)
	}
	args := p.arguments.value
	res := guard.CheckArgs(in, args, guard.ArgsOptions{Strip: t.cfg.strip, Repair: t.cfg.repair, NoDecode: true})
	if len(res.Repairs) > 0 {
		reps := make([]string, len(res.Repairs))
		for i, rep := range res.Repairs {
			reps[i] = rep.String()
		}
		t.emit(ctx, guard.Event{Kind: guard.EventRepaired, Tool: p.name, CallID: callID, Paths: reps})
	}
	if len(res.Stripped) > 0 {
		t.emit(ctx, guard.Event{Kind: guard.EventStripped, Tool: p.name, CallID: callID, Paths: res.Stripped})
	}
	if res.Err != nil {
		e := res.Err
		e.Tool, e.CallID = p.name, callID
		feedback := errfmt.Feedback(e)
		t.emit(ctx, guard.Event{Kind: guard.EventInvalid, Tool: p.name, CallID: callID, Err: e, Feedback: feedback})
		return t.answer(r, m.id, feedback, e), nil
	}
	fwd, sent := body, args
	if res.Changed && args != nil {
		start := m.params.off + p.arguments.off
		fwd, sent = slices.Concat(body[:start], res.Args, body[start+len(args):]), res.Args
	}
	if text, cause := t.preflight(r, k, ts, p.name, callID, sent); cause != nil {
		return t.answer(r, m.id, text, cause), nil
	}
	resp, err := t.forward(r, fwd)
	if err != nil || out == nil {
		return t.watch(r, k, nil)(resp, err)
	}
	return t.checkResult(r, k, resp, m.id, p.name, out)
}

// passCall forwards a tools/call the transport does not check (ts: what
// it knows of the tool, nil for nothing), as it came, unless the policy
// or a limit refuses it.
func (t *transport) passCall(r *http.Request, k listKey, body, id []byte, p callParams, ts *toolSchema) (*http.Response, error) {
	if text, cause := t.preflight(r, k, ts, p.name, idText(id), p.arguments.value); cause != nil {
		return t.answer(r, id, text, cause), nil
	}
	return t.pass(r, body)
}

// preflight asks the policy, then the limits, about a call about to be
// forwarded with args: the text and cause of the answer that refuses it,
// or a nil cause. A call the policy refuses is not counted.
func (t *transport) preflight(r *http.Request, k listKey, ts *toolSchema, name, id string, args []byte) (string, error) {
	if text, cause := t.toolPolicy(r, ts, name, id); cause != nil {
		return text, cause
	}
	return t.admit(r, k, name, id, args)
}

// refuseOrPass handles a tools/call the transport cannot check: answered
// with an isError result failing closed, passed with an event failing
// open.
func (t *transport) refuseOrPass(r *http.Request, body, id []byte, tool string, reason error) (*http.Response, error) {
	t.emitFailOpen(r.Context(), guard.Event{Kind: guard.EventUnguarded, Tool: tool, CallID: idText(id), Err: reason})
	if t.cfg.failClosed {
		return t.answer(r, id, notExecuted(tool, reason), reason), nil
	}
	return t.pass(r, body)
}

// notExecuted is the text of a call refused because it could not be
// checked.
func notExecuted(tool string, reason error) string {
	text := errfmt.PrefixNotExecuted + ": the arguments could not be checked"
	if tool != "" {
		text = fmt.Sprintf("%s: the arguments of tool %q could not be checked", errfmt.PrefixNotExecuted, tool)
	}
	return safetext.Truncate(text+": "+reason.Error(), errfmt.MaxToolErrorBytes)
}

// compile returns the tool's compiled input and output schemas (nil when
// it declares none), compiled on its first call (through the transport's
// cache, so a list learned again costs no second compilation).
func (t *transport) compile(ts *toolSchema) (in, out *validation.Schema, err error) {
	ts.once.Do(func() {
		if ts.input != nil {
			if ts.in, ts.err = t.schemas.Get(ts.input); ts.err != nil {
				ts.err = fmt.Errorf("inputSchema: %w", ts.err)
				return
			}
		}
		if ts.output != nil {
			if ts.out, ts.err = t.schemas.Get(ts.output); ts.err != nil {
				ts.err = fmt.Errorf("outputSchema: %w", ts.err)
			}
		}
	})
	return ts.in, ts.out, ts.err
}
