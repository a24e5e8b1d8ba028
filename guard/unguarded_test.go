package guard_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// readCodec is a minimal host whose responses may be unreadable: the
// stages' view of an httpguard answer in an encoding it cannot decode.
type readCodec struct{}

type readReq struct{ tools []guard.Tool }

type readResp struct {
	calls  []guard.Call
	unread error
}

var _ guard.Codec[*readReq, *readResp] = readCodec{}

func (readCodec) Request(_ context.Context, req *readReq) guard.RequestInfo[*readReq, *readResp] {
	return guard.RequestInfo[*readReq, *readResp]{Tools: req.tools}
}
func (readCodec) Response(_ *readReq, r *readResp) guard.ResponseInfo {
	if r.unread != nil {
		return guard.ResponseInfo{Unreadable: r.unread}
	}
	return guard.ResponseInfo{Calls: r.calls}
}
func (readCodec) Accept(r *readResp, _ []guard.Verdict) (*readResp, error) {
	return r, nil
}
func (readCodec) Reask(req *readReq, _ *readResp, _ []guard.Answer) (*readReq, error) {
	return req, nil
}
func (readCodec) End(_ *readReq, _ string, cause error) *readResp {
	return &readResp{unread: nil}
}

type recorded struct {
	mu     sync.Mutex
	events []guard.Event
}

func (r *recorded) handle(_ context.Context, e guard.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorded) count(k guard.EventKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// TestUnreadableResponse: a response the codec cannot read is never taken
// for one without tool calls. Failing closed, ToolArgValidation and
// ToolCallLimit refuse it with an *UnguardableError; failing open, it
// passes with an unguarded event, every time.
func TestUnreadableResponse(t *testing.T) {
	why := errors.New("Content-Encoding \"x-unknown\"")
	req := &readReq{tools: []guard.Tool{{Name: "get_weather", Schema: `{"type":"object","properties":{"city":{"type":"string"}}}`}}}
	model := func(context.Context, *readReq) (*readResp, error) {
		// The bytes hold a call the codec cannot see.
		return &readResp{unread: why}, nil
	}
	for _, tc := range []struct {
		name string
		mw   func(ev *recorded, closed bool) guard.Middleware[*readReq, *readResp]
		who  string
	}{
		{"ToolArgValidation", func(ev *recorded, closed bool) guard.Middleware[*readReq, *readResp] {
			opts := []guard.ValidationOption{guard.WithEventHandler(ev.handle)}
			if closed {
				opts = append(opts, guard.WithFailClosed())
			}
			return guard.ToolArgValidation(readCodec{}, opts...)
		}, "ToolArgValidation"},
		{"ToolCallLimit", func(ev *recorded, closed bool) guard.Middleware[*readReq, *readResp] {
			opts := []guard.LimitOption{guard.WithEventHandler(ev.handle), guard.WithRunLimit(1), guard.WithExitBehavior(guard.ExitError)}
			if closed {
				opts = append(opts, guard.WithFailClosed())
			}
			return guard.ToolCallLimit(readCodec{}, opts...)
		}, "ToolCallLimit"},
	} {
		t.Run(tc.name+"/closed", func(t *testing.T) {
			ev := &recorded{}
			h := tc.mw(ev, true)(model)
			for i := range 3 {
				resp, err := h(context.Background(), req)
				var ue *guard.UnguardableError
				if !errors.As(err, &ue) || ue.Middleware != tc.who || !errors.Is(err, why) || resp != nil {
					t.Fatalf("call %d: %s = %v, %v; want an *UnguardableError from %s wrapping the reason", i+1, tc.name, resp, err, tc.who)
				}
			}
			if n := ev.count(guard.EventUnguarded); n != 3 {
				t.Errorf("unguarded events = %d, want 3 (one per refused response)", n)
			}
		})
		t.Run(tc.name+"/open", func(t *testing.T) {
			ev := &recorded{}
			h := tc.mw(ev, false)(model)
			for i := range 3 {
				resp, err := h(context.Background(), req)
				if err != nil || resp == nil || resp.unread != why {
					t.Fatalf("call %d: %s = %v, %v; want the response passed as it came", i+1, tc.name, resp, err)
				}
			}
			if n := ev.count(guard.EventUnguarded); n != 3 {
				t.Errorf("unguarded events = %d, want 3: every response passed unread is reported", n)
			}
		})
	}
}
