package guard_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// countingCodec counts the calls each of its methods receives: the five of
// guard.Codec and those of the optional interfaces the stages discover.
type countingCodec struct {
	mu sync.Mutex
	n  map[string]int
}

type countReq struct{ tools []guard.Tool }

type countResp struct{ calls []guard.Call }

var (
	_ guard.Codec[*countReq, *countResp]           = (*countingCodec)(nil)
	_ guard.TranscriptReader[*countReq]            = (*countingCodec)(nil)
	_ guard.MalformedReader[*countReq, *countResp] = (*countingCodec)(nil)
)

func (c *countingCodec) hit(m string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[m]++
}

func (c *countingCodec) Request(_ context.Context, req *countReq) guard.RequestInfo[*countReq, *countResp] {
	c.hit("Request")
	return guard.RequestInfo[*countReq, *countResp]{Tools: req.tools, Model: "m"}
}

func (c *countingCodec) Response(_ *countReq, resp *countResp) guard.ResponseInfo {
	c.hit("Response")
	return guard.ResponseInfo{Calls: resp.calls}
}

func (c *countingCodec) Accept(resp *countResp, vs []guard.Verdict) (*countResp, error) {
	c.hit("Accept")
	for i, v := range vs {
		if v.Args != nil {
			resp.calls[i].Args = v.Args
		}
	}
	return resp, nil
}

func (c *countingCodec) Reask(req *countReq, _ *countResp, _ []guard.Answer) (*countReq, error) {
	c.hit("Reask")
	return req, nil
}

func (c *countingCodec) End(*countReq, string, error) *countResp {
	c.hit("End")
	return &countResp{}
}

func (c *countingCodec) Transcript(context.Context, *countReq) []guard.Message {
	c.hit("Transcript")
	return nil
}

func (c *countingCodec) Malformed(*countReq, *countResp, error) (guard.Malformed, bool) {
	c.hit("Malformed")
	return guard.Malformed{}, false
}

func (c *countingCodec) ReaskMalformed(req *countReq, _ guard.Malformed, _ string) (*countReq, error) {
	c.hit("ReaskMalformed")
	return req, nil
}

func (c *countingCodec) total() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.n))
	total := 0
	for m, k := range c.n {
		names = append(names, fmt.Sprintf("%s=%d", m, k))
		total += k
	}
	sort.Strings(names)
	return total, strings.Join(names, " ")
}

type quietObserver struct{}

func (quietObserver) OnEvent(context.Context, guard.Event) {}

func (quietObserver) OnModelCall(ctx context.Context, _ guard.ModelCall) (context.Context, func(guard.ModelResult)) {
	return ctx, nil
}

func (quietObserver) OnCall(ctx context.Context, _ guard.ModelCall) (context.Context, func(error)) {
	return ctx, nil
}

// Each stage calls the codec at most three times for a model call (the
// Codec's promise): here one model call whose one tool call is valid once
// an empty value is stripped, so that Accept writes it back, and whose
// context names no run, so that the limits read the transcript. The whole
// stack a proxy builds is logged too.
func TestCodecCallsPerModelCall(t *testing.T) {
	tools := []guard.Tool{{Name: "get", Schema: `{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}`}}
	model := func(context.Context, *countReq) (*countResp, error) {
		return &countResp{calls: []guard.Call{{ID: "1", Name: "get", Args: []byte(`{"a": "x", "b": null}`)}}}, nil
	}
	type stack = func(c *countingCodec) guard.Middleware[*countReq, *countResp]
	stages := []struct {
		name string
		mk   stack
		max  int
	}{
		{"ToolArgValidation", func(c *countingCodec) guard.Middleware[*countReq, *countResp] {
			return guard.ToolArgValidation[*countReq, *countResp](c)
		}, 3},
		{"ToolCallLimit", func(c *countingCodec) guard.Middleware[*countReq, *countResp] {
			return guard.ToolCallLimit[*countReq, *countResp](c, guard.WithRunLimit(10))
		}, 3},
		{"ModelCallLimit", func(c *countingCodec) guard.Middleware[*countReq, *countResp] {
			return guard.ModelCallLimit[*countReq, *countResp](c, guard.WithRunLimit(10))
		}, 3},
		{"ModelRetry", func(c *countingCodec) guard.Middleware[*countReq, *countResp] {
			return guard.ModelRetry[*countReq, *countResp](c)
		}, 3},
		{"Observe", func(c *countingCodec) guard.Middleware[*countReq, *countResp] {
			return guard.Observe[*countReq, *countResp](c, quietObserver{})
		}, 3},
		{"stack", func(c *countingCodec) guard.Middleware[*countReq, *countResp] {
			return guard.Chain(
				guard.Observe[*countReq, *countResp](c, quietObserver{}),
				guard.ToolCallLimit[*countReq, *countResp](c, guard.WithRunLimit(10)),
				guard.ModelCallLimit[*countReq, *countResp](c, guard.WithRunLimit(10)),
				guard.ToolArgValidation[*countReq, *countResp](c),
				guard.ModelRetry[*countReq, *countResp](c))
		}, 0},
	}
	for _, s := range stages {
		c := &countingCodec{n: map[string]int{}}
		resp, err := s.mk(c)(model)(context.Background(), &countReq{tools: tools})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		n, per := c.total()
		t.Logf("%-17s %2d calls of the codec: %s", s.name, n, per)
		if s.max > 0 && n > s.max {
			t.Errorf("%s called the codec %d times for one model call, want at most %d", s.name, n, s.max)
		}
		if s.name == "ToolArgValidation" && string(resp.calls[0].Args) != `{"a":"x"}` {
			t.Errorf("ToolArgValidation handed on %s, want the stripped arguments", resp.calls[0].Args)
		}
	}
}
