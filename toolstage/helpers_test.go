package toolstage_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/toolstage"
)

// call returns a guard.Call of tool name with args, as a model stage
// hands it on.
func call(id, name, args string) guard.Call {
	return guard.Call{ID: id, Name: name, Args: []byte(args)}
}

// counted returns a tool named name that counts its runs in runs and
// answers result.
func counted(name, result string, runs *atomic.Int32) toolstage.Tool {
	return toolstage.NewSchemaTool(name, "Answers "+result+".", nil, func(context.Context, map[string]any) (string, error) {
		runs.Add(1)
		return result, nil
	})
}

// orderArgs are the arguments of an order: the item from the model, the
// user from the program.
type orderArgs struct {
	Item   string `json:"item"`
	UserID string `json:"user_id" toolguard:"inject"`
}

// signedInUser is the tests' Inject function: the signed-in user.
func signedInUser(context.Context, *toolstage.ToolCall) (any, error) { return "u-alice", nil }

// transferArgs are the arguments of the tests' payment tool.
type transferArgs struct {
	Amount int    `json:"amount"`
	To     string `json:"to,omitempty"`
}

// eventLog collects the events a Stage's WithEventHandler is given.
type eventLog struct {
	mu     sync.Mutex
	events []guard.Event
}

func (l *eventLog) handle(_ context.Context, e guard.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// of returns the events of kind k, in the order they came.
func (l *eventLog) of(k guard.EventKind) []guard.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []guard.Event
	for _, e := range l.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// all returns every event so far.
func (l *eventLog) all() []guard.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// ids returns the call ids of outs, in order.
func ids(outs []toolstage.Outcome) []string {
	s := make([]string, len(outs))
	for i, o := range outs {
		s[i] = o.Call.ID
	}
	return s
}

// indexes returns the Index of each of outs, in order.
func indexes(outs []toolstage.Outcome) []int {
	s := make([]int, len(outs))
	for i, o := range outs {
		s[i] = o.Index
	}
	return s
}

// logOutcomes writes outs to the test's log, one line each.
func logOutcomes(t *testing.T, what string, outs []toolstage.Outcome) {
	t.Helper()
	for _, o := range outs {
		t.Logf("%s: Index %d, id %s, tool %s, Content %q, Err %v", what, o.Index, o.Call.ID, o.Call.Name, o.Content, o.Err)
	}
}

// modelStage runs the model stage, guard's ToolArgValidation, over a
// response holding calls, as httpguard does over a provider's response,
// and returns the calls it hands on. ctx is the one the stage's Scope
// returned: ToolArgValidation validates against the stage's schemas and
// records in the Scope's record the calls it validated.
func modelStage(t testing.TB, ctx context.Context, calls []guard.Call, opts ...guard.ValidationOption) []guard.Call {
	t.Helper()
	model := func(context.Context, callsRequest) (*callsResponse, error) {
		return &callsResponse{calls: slices.Clone(calls)}, nil
	}
	resp, err := guard.ToolArgValidation[callsRequest, *callsResponse](callsCodec{}, opts...)(model)(ctx, callsRequest{})
	if err != nil {
		t.Fatalf("ToolArgValidation: %v", err)
	}
	return resp.calls
}

// callsCodec is the smallest guard.Codec: a response is its tool calls,
// a request offers no tools of its own (the schemas come from the
// context: Stage.Scope), and nothing streams.
type callsCodec struct{}

type callsRequest struct{}

type callsResponse struct{ calls []guard.Call }

func (callsCodec) Request(context.Context, callsRequest) guard.RequestInfo[callsRequest, *callsResponse] {
	return guard.RequestInfo[callsRequest, *callsResponse]{}
}

func (callsCodec) Response(_ callsRequest, resp *callsResponse) guard.ResponseInfo {
	return guard.ResponseInfo{Calls: resp.calls}
}

func (callsCodec) Accept(resp *callsResponse, vs []guard.Verdict) (*callsResponse, error) {
	for i, v := range vs {
		if v.Args != nil {
			resp.calls[i].Args = v.Args
		}
	}
	return resp, nil
}

func (callsCodec) Reask(req callsRequest, _ *callsResponse, _ []guard.Answer) (callsRequest, error) {
	return req, nil
}

func (callsCodec) End(callsRequest, string, error) *callsResponse { return &callsResponse{} }
