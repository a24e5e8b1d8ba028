package guard_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/retry"
)

var errTransient = errors.New("transient: 503 from the provider")

// flaky is an inner middleware that fails some calls: the request's last
// human message says which ("fail" on every attempt, "fail-reask" on the
// re-ask only).
func flaky(next guard.Handler[*tReq, *tResp]) guard.Handler[*tReq, *tResp] {
	return func(ctx context.Context, req *tReq) (*tResp, error) {
		ask, reask := lastHuman(req.Msgs), req.Msgs[len(req.Msgs)-1].Role == roleTool
		if strings.HasSuffix(ask, " fail") || (strings.HasSuffix(ask, " fail-reask") && reask) {
			return nil, errTransient
		}
		return next(ctx, req)
	}
}

// lastHuman returns the text of the last user message of msgs.
func lastHuman(msgs []msg) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == roleUser {
			return msgs[i].Text
		}
	}
	return ""
}

// scriptedAnswer answers from the request alone, so that concurrent calls
// can share one model: the human message "n kind" asks for a call whose
// city is "cn"; kinds "invalid-once" and "fail-reask" send an invalid call
// first, "invalid" always.
func scriptedAnswer(_ context.Context, _ *script, r *tReq) (*tResp, error) {
	msgs := r.Msgs
	n, kind, _ := strings.Cut(lastHuman(msgs), " ")
	reask := msgs[len(msgs)-1].Role == roleTool
	a := `{"city": "c` + n + `"}`
	if kind == "invalid" || (!reask && (kind == "invalid-once" || kind == "fail-reask")) {
		a = `{"city": ` + n + `, "units": null}`
	}
	return &tResp{Calls: []guard.Call{{ID: "call_" + n, Name: "get_weather", Args: []byte(a)}}}, nil
}

// TestThousandGoroutinesShareOneModel: 1,000 goroutines share one wrapped
// model — ToolArgValidation over a flaky inner middleware — with valid,
// invalid-then-fixed, always-invalid and failing calls mixed. Each gets
// exactly its own outcome, the model is called exactly as often as the
// outcomes require, and -race sees nothing.
func TestThousandGoroutinesShareOneModel(t *testing.T) {
	t.Parallel()
	const callers = 1000
	kinds := []struct {
		name       string
		modelCalls int    // calls reaching the model
		wantArgs   string // "%d" is the caller's number; "" = an error
	}{
		{"valid", 1, `{"city": "c%d"}`},
		{"invalid-once", 2, `{"city": "c%d"}`},
		{"invalid", 3, `{"city":%d}`}, // fails open, "units": null stripped
		{"fail", 0, ""},
		{"fail-reask", 1, ""},
	}
	total := 0
	for i := range callers {
		total += kinds[i%len(kinds)].modelCalls
	}
	steps := make([]step, total)
	for i := range steps {
		steps[i] = scriptedAnswer
	}
	m := newScript(steps...)
	llm := wrap(m, toolArgValidation(), flaky)

	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := kinds[i%len(kinds)]
			req := &tReq{Msgs: []msg{{Role: roleUser, Text: strconv.Itoa(i) + " " + k.name}}, Tools: []guard.Tool{weatherTool}}
			resp, err := llm(context.Background(), req)
			switch {
			case k.wantArgs == "" && !errors.Is(err, errTransient):
				errs <- fmt.Errorf("caller %d (%s): error %v, want the transient error", i, k.name, err)
			case k.wantArgs != "" && err != nil:
				errs <- fmt.Errorf("caller %d (%s): %v", i, k.name, err)
			case k.wantArgs != "":
				if got, want := string(resp.Calls[0].Args), fmt.Sprintf(k.wantArgs, i); got != want {
					errs <- fmt.Errorf("caller %d (%s): arguments %s, want %s", i, k.name, got, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, left := len(m.requests()), m.remaining(); n != total || left != 0 {
		t.Errorf("model calls = %d (%d steps left), want exactly %d", n, left, total)
	}
}

// TestThousandGoroutinesFullStack: 1,000 goroutines share the recommended
// stack, Wrap(fake, ToolCallLimit, ToolArgValidation, ModelRetry), each in
// its own run, with valid, invalid-then-fixed, always-invalid, transient
// failures (absorbed by ModelRetry, also on a re-ask), permanent 503s and
// batches over the run limit mixed. Each caller gets exactly its outcome
// and the model is called exactly as often as the outcomes need; clean
// under -race.
func TestThousandGoroutinesFullStack(t *testing.T) {
	t.Parallel()
	const callers = 1000
	kinds := []struct {
		name       string
		modelCalls int
		wantArgs   string // "%d" is the caller's number
		wantErr    bool   // a *retry.Error after 3 attempts
		wantLimit  bool   // ExitEnd's text, no tool calls
	}{
		{name: "valid", modelCalls: 1, wantArgs: `{"city": "c%d"}`},
		{name: "invalid-once", modelCalls: 2, wantArgs: `{"city": "c%d"}`},
		{name: "invalid", modelCalls: 3, wantArgs: `{"city":%d}`},
		{name: "503-once", modelCalls: 2, wantArgs: `{"city": "c%d"}`},
		{name: "503-on-reask", modelCalls: 3, wantArgs: `{"city": "c%d"}`},
		{name: "503-always", modelCalls: 3, wantErr: true},
		{name: "too-many", modelCalls: 1, wantLimit: true},
	}
	total := 0
	for i := range callers {
		total += kinds[i%len(kinds)].modelCalls
	}
	attempts := make([]atomic.Int32, callers) // model calls per caller
	unavailable := errors.New("API returned unexpected status code: 503: Service Unavailable")
	answer := func(_ context.Context, _ *script, r *tReq) (*tResp, error) {
		msgs := r.Msgs
		ns, kind, _ := strings.Cut(lastHuman(msgs), " ")
		n, _ := strconv.Atoi(ns)
		attempt := attempts[n].Add(1)
		reask := msgs[len(msgs)-1].Role == roleTool
		valid := `{"city": "c` + ns + `"}`
		a := valid
		switch {
		case kind == "503-always", kind == "503-once" && attempt == 1, kind == "503-on-reask" && attempt == 2:
			return nil, unavailable
		case kind == "invalid", kind == "invalid-once" && !reask, kind == "503-on-reask" && !reask:
			a = `{"city": ` + ns + `, "units": null}`
		}
		calls := []guard.Call{{ID: "call_" + ns, Name: "get_weather", Args: []byte(a)}}
		if kind == "too-many" {
			for j := range 2 {
				calls = append(calls, guard.Call{ID: fmt.Sprintf("call_%s_%d", ns, j), Name: "get_weather", Args: []byte(valid)})
			}
		}
		return &tResp{Calls: calls}, nil
	}
	steps := make([]step, total)
	for i := range steps {
		steps[i] = answer
	}
	m := newScript(steps...)
	llm := wrap(m,
		toolCallLimit(guard.WithRunLimit(2), guard.WithExitBehavior(guard.ExitEnd)),
		toolArgValidation(),
		modelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} })),
	)

	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := kinds[i%len(kinds)]
			req := &tReq{Msgs: []msg{{Role: roleUser, Text: strconv.Itoa(i) + " " + k.name}}, Tools: []guard.Tool{weatherTool}}
			resp, err := llm(guard.WithRun(context.Background()), req)
			var rerr *retry.Error
			switch {
			case k.wantErr:
				if !errors.As(err, &rerr) || rerr.Attempts != 3 || !errors.Is(err, unavailable) {
					errs <- fmt.Errorf("caller %d (%s): error %v, want a *retry.Error after 3 attempts wrapping the 503", i, k.name, err)
				}
			case err != nil:
				errs <- fmt.Errorf("caller %d (%s): %v", i, k.name, err)
			case k.wantLimit:
				if len(resp.Calls) != 0 || !strings.Contains(resp.Text, "limit") {
					errs <- fmt.Errorf("caller %d (%s): %+v, want the limit text and no tool calls", i, k.name, resp)
				}
			default:
				if got, want := string(resp.Calls[0].Args), fmt.Sprintf(k.wantArgs, i); got != want {
					errs <- fmt.Errorf("caller %d (%s): arguments %s, want %s", i, k.name, got, want)
				}
			}
			if got := int(attempts[i].Load()); got != k.modelCalls {
				errs <- fmt.Errorf("caller %d (%s): %d model calls, want %d", i, k.name, got, k.modelCalls)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, left := len(m.requests()), m.remaining(); n != total || left != 0 {
		t.Errorf("model calls = %d (%d steps left), want exactly %d", n, left, total)
	}
}

// heapModel answers every call with a fresh response, alternating an
// invalid call (re-asked) and a valid one, without recording anything, so
// that the heap measures the middleware alone.
func heapModel(_ context.Context, r *tReq) (*tResp, error) {
	msgs := r.Msgs
	a := `{"city": "Paris", "units": "celsius"}`
	if msgs[len(msgs)-1].Role != roleTool && len(msgs)%2 == 0 {
		a = `{"city": 75001, "units": null, "tags": []}`
	}
	return &tResp{Calls: []guard.Call{{ID: "call_1", Name: "get_weather", Args: []byte(a)}}}, nil
}

// TestMemoryFlatOverManyCalls: 100,000 calls through one wrapped model,
// half of them re-asked, a quarter offering the tool with a fresh schema
// map of a content never seen before (so ToolArgValidation's
// validation.Cache compiles it and must forget old ones) and a quarter a
// fresh map of a known content. The live heap after GC at 100,000 calls is
// no more than a few MB above the one at 50,000, once the cache has
// settled: it holds at most validation.DefaultCacheSize (4,096) schemas by
// content and as many identities, evicting an eighth when full, and nothing
// else is kept between calls. Under -short: 16,000 calls, checkpoint at
// 10,000, a new schema every other call; skipped under -race.
func TestMemoryFlatOverManyCalls(t *testing.T) {
	// Not parallel: the heap is the whole process's.
	// The checkpoint comes after the cache has settled: it is full after
	// 4,096 new schemas (one call in every `every`), and then approaches
	// its steady state, where an entry forgotten by content may still be
	// held by identity (live heap, KB: 36,944 at 20,000 calls, 45,906 at
	// 50,000, 49,662 at 100,000).
	n, checkpoint, every := 100_000, 50_000, 4
	if raceEnabled {
		// Sequential code: -race adds nothing but 10 s. CI runs this
		// test without it.
		t.Skip("memory figures are measured without -race")
	}
	if testing.Short() {
		n, checkpoint, every = 16_000, 10_000, 2
	}
	llm := toolArgValidation()(heapModel)
	shared := []guard.Tool{weatherTool}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var atCheckpoint uint64
	for i := 1; i <= n; i++ {
		opt := shared
		switch {
		case i%every == 0: // a schema never seen before
			opt = []guard.Tool{{Name: "get_weather", Schema: weatherSchemaMap("call " + strconv.Itoa(i))}}
		case i%4 == 1: // a fresh map of a known schema
			opt = []guard.Tool{{Name: "get_weather", Schema: weatherSchemaMap("the weather")}}
		}
		msgs := heapQuestion // two messages: heapModel sends an invalid call first
		if i%2 == 0 {
			msgs = heapQuestion[1:]
		}
		resp, err := llm(context.Background(), &tReq{Msgs: msgs, Tools: opt})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(resp.Calls[0].Args); got != `{"city": "Paris", "units": "celsius"}` {
			t.Fatalf("call %d: arguments %s", i, got)
		}
		if i == checkpoint {
			atCheckpoint = heap()
		}
	}
	end := heap()
	runtime.KeepAlive(llm) // measured with its cache, not collected
	t.Logf("live heap after GC: %d KB after %d calls, %d KB after %d calls", atCheckpoint>>10, checkpoint, end>>10, n)
	// The cache keeps at most 4,096 schemas by content and 4,096 by
	// identity (so at most 8,192 compiled schemas of about 9 KB live),
	// evicting an eighth of either when full, so the live heap swings by
	// several MB; an unbounded cache would have grown by 12,500 schemas
	// (about 115 MB) over the same calls.
	const slack = 16 << 20
	if end > atCheckpoint+slack {
		t.Errorf("live heap grew from %d to %d bytes between call %d and call %d, want at most %d more",
			atCheckpoint, end, checkpoint, n, slack)
	}
}

// heapQuestion is a request's two messages, as package middleware's tests
// ask it (a system prompt, then the user's).
var heapQuestion = []msg{{Role: roleNote, Text: "You are helpful."}, {Role: roleUser, Text: "Weather in Paris?"}}

// weatherSchemaMap returns a new map holding get_weather's schema with the
// given description.
func weatherSchemaMap(description string) map[string]any {
	return map[string]any{
		"type":        "object",
		"description": description,
		"properties": map[string]any{
			"city":  map[string]any{"type": "string"},
			"units": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required":             []any{"city"},
		"additionalProperties": false,
	}
}
