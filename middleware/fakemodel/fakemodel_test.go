package fakemodel_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

var hi = []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}

func TestScriptInOrder(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("a", `{}`), fakemodel.Call("b", `{"x":1}`)),
		fakemodel.Text("done"),
		fakemodel.Fail(boom),
		fakemodel.ToolCalls(fakemodel.Call("c", `{}`)),
	)
	ctx := context.Background()
	r1, err := m.GenerateContent(ctx, hi, llms.WithTemperature(0.3))
	if err != nil {
		t.Fatal(err)
	}
	ch := r1.Choices[0]
	if len(ch.ToolCalls) != 2 || ch.ToolCalls[0].ID != "call_1" || ch.ToolCalls[1].ID != "call_2" || ch.ToolCalls[1].FunctionCall.Arguments != `{"x":1}` {
		t.Errorf("first response = %+v, want two calls call_1, call_2", ch.ToolCalls)
	}
	if ch.FuncCall != ch.ToolCalls[0].FunctionCall {
		t.Errorf("FuncCall does not alias the first call, as OpenAI's does")
	}
	if r2, err := m.GenerateContent(ctx, hi); err != nil || r2.Choices[0].Content != "done" || len(r2.Choices[0].ToolCalls) != 0 {
		t.Errorf("second response = %v, %v; want text done", r2, err)
	}
	if _, err := m.GenerateContent(ctx, hi); !errors.Is(err, boom) {
		t.Errorf("third call error = %v, want boom", err)
	}
	if r4, _ := m.GenerateContent(ctx, hi); r4.Choices[0].ToolCalls[0].ID != "call_3" {
		t.Errorf("ids restart: %q, want call_3", r4.Choices[0].ToolCalls[0].ID)
	}
	if _, err := m.GenerateContent(ctx, hi); !errors.Is(err, fakemodel.ErrExhausted) {
		t.Errorf("call past the script = %v, want ErrExhausted", err)
	}
	reqs := m.Requests()
	if len(reqs) != 5 || reqs[0].Options.Temperature != 0.3 || reqs[0].Messages[0].Parts[0].(llms.TextContent).Text != "hi" {
		t.Errorf("Requests() = %+v", reqs)
	}
}

func TestResponsesAreFreshCopies(t *testing.T) {
	t.Parallel()
	resp := &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{{FunctionCall: &llms.FunctionCall{Name: "a", Arguments: "{}"}}}}}}
	m := fakemodel.New(fakemodel.Response(resp), fakemodel.Response(resp))
	r1, _ := m.GenerateContent(context.Background(), hi)
	r1.Choices[0].ToolCalls[0].FunctionCall.Arguments = "changed"
	r2, _ := m.GenerateContent(context.Background(), hi)
	if r2.Choices[0].ToolCalls[0].FunctionCall.Arguments != "{}" || r2.Choices[0].ToolCalls[0].ID != "" {
		t.Errorf("second response %+v was affected by a change to the first, or got an id", r2.Choices[0].ToolCalls[0])
	}
	msgs := []llms.MessageContent{{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "1", FunctionCall: &llms.FunctionCall{Name: "a", Arguments: "x"}}}}}
	m2 := fakemodel.New(fakemodel.Text("ok"))
	m2.GenerateContent(context.Background(), msgs)
	msgs[0].Parts[0].(llms.ToolCall).FunctionCall.Arguments = "mutated"
	if got := m2.Requests()[0].Messages[0].Parts[0].(llms.ToolCall).FunctionCall.Arguments; got != "x" {
		t.Errorf("recorded request changed with the caller's messages: %q", got)
	}
}

func TestCancelledContextConsumesNothing(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(fakemodel.Text("x"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.GenerateContent(ctx, hi); !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	if m.Remaining() != 1 || len(m.Requests()) != 0 {
		t.Errorf("a cancelled call consumed a step or was recorded")
	}
}

func TestTextStreams(t *testing.T) {
	t.Parallel()
	var got []string
	m := fakemodel.New(fakemodel.Text("streamed"))
	_, err := m.GenerateContent(context.Background(), hi, llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
		got = append(got, string(chunk))
		return nil
	}))
	if err != nil || len(got) != 1 || got[0] != "streamed" {
		t.Errorf("streamed %v, %v; want one chunk", got, err)
	}
}

func TestFuncAndCall(t *testing.T) {
	t.Parallel()
	m := fakemodel.New(fakemodel.Func(func(_ context.Context, msgs []llms.MessageContent, o llms.CallOptions) (*llms.ContentResponse, error) {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: string(msgs[0].Role)}}}, nil
	}))
	out, err := m.Call(context.Background(), "prompt")
	if err != nil || out != "human" {
		t.Errorf("Call = %q, %v; want the Func's answer", out, err)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	const n = 100
	steps := make([]fakemodel.Step, n)
	for i := range steps {
		steps[i] = fakemodel.ToolCalls(fakemodel.Call("t", "{}"))
	}
	m := fakemodel.New(steps...)
	var wg sync.WaitGroup
	ids := make(chan string, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := m.GenerateContent(context.Background(), hi)
			if err == nil {
				ids <- r.Choices[0].ToolCalls[0].ID
			}
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != n || len(m.Requests()) != n || m.Remaining() != 0 {
		t.Errorf("%d distinct ids, %d requests, %d remaining; want %d, %d, 0", len(seen), len(m.Requests()), m.Remaining(), n, n)
	}
}
