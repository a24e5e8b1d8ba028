package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"github.com/toolguard/toolguard/httpguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"github.com/toolguard/toolguard/toolstage"
)

// This file holds what the openai-go tests share: the conversions a
// program writes between openai-go's types and the tool stage's, the
// program's loop (chatProgram), and the test's instruments (an event
// recorder, the provider's request log, a redis-server).

// openaiTools converts the stage's definitions to openai-go's tool params:
// what the program offers the model.
func openaiTools(t *testing.T, defs []toolstage.Definition) []openai.ChatCompletionToolUnionParam {
	t.Helper()
	tools := make([]openai.ChatCompletionToolUnionParam, 0, len(defs))
	for _, d := range defs {
		var params shared.FunctionParameters
		if err := json.Unmarshal(d.Parameters, &params); err != nil {
			t.Fatalf("definition %q: parameters %s: %v", d.Name, d.Parameters, err)
		}
		tools = append(tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        d.Name,
			Description: openai.String(d.Description),
			Parameters:  params,
		}))
	}
	return tools
}

// openaiCalls converts the function calls of an assistant message to the
// tool stage's input. (The program offers no custom tools, so a message
// holds function calls only.)
func openaiCalls(m openai.ChatCompletionMessage) []guard.Call {
	var calls []guard.Call
	for _, tc := range m.ToolCalls {
		if tc.Type == "function" {
			calls = append(calls, guard.Call{ID: tc.ID, Name: tc.Function.Name, Args: []byte(tc.Function.Arguments)})
		}
	}
	return calls
}

// openaiToolMessage converts one outcome to openai-go's tool message: what
// the model reads (Content) for the call's id. Outcome.Args, which holds
// injected values, is never sent.
func openaiToolMessage(o toolstage.Outcome) openai.ChatCompletionMessageParamUnion {
	return openai.ToolMessage(o.Content, o.Call.ID)
}

// chatProgram is the program under test: an openai-go Chat Completions
// loop of its own over a toolstage.Stage, its HTTP client httpguard's. Its
// conversation is params.Messages, openai-go's own message list.
type chatProgram struct {
	t      *testing.T
	name   string // "process A", …: prefixes what it logs
	client openai.Client
	stage  *toolstage.Stage
	stream bool // Chat.Completions.NewStreaming into a ChatCompletionAccumulator
	params openai.ChatCompletionNewParams
	// validated records, for each call handed to the stage, whether
	// httpguard validated exactly it (the context's call record): the
	// test's check that the stage runs it without checking it again.
	validated []bool
	// outcomes are the outcomes appended as tool messages, in order.
	outcomes []toolstage.Outcome
}

// newChatProgram returns a program on srv whose client sends through
// httpguard with ToolArgValidation (its events go to the context's
// handler: the stage's, through Scope), offering the stage's tools, its
// conversation started with the user's prompt.
func newChatProgram(t *testing.T, name string, srv *fp.Server, stage *toolstage.Stage, stream bool, prompt string) *chatProgram {
	t.Helper()
	client := openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey("sk-test"),
		option.WithHTTPClient(&http.Client{Transport: httpguard.New(nil, httpguard.ToolArgValidation())}),
		option.WithMaxRetries(0),
	)
	return &chatProgram{
		t: t, name: name, client: client, stage: stage, stream: stream,
		params: openai.ChatCompletionNewParams{
			Model:    "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			Tools:    openaiTools(t, stage.Definitions()),
		},
	}
}

// ask sends the conversation (one SDK call: httpguard's re-asks happen
// inside it) and appends the assistant's message to it.
func (p *chatProgram) ask(ctx context.Context) (openai.ChatCompletionMessage, error) {
	var msg openai.ChatCompletionMessage
	if p.stream {
		params := p.params
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		stream := p.client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			if !acc.AddChunk(stream.Current()) {
				return msg, fmt.Errorf("the accumulator refused chunk %s", stream.Current().RawJSON())
			}
		}
		if err := stream.Err(); err != nil {
			return msg, err
		}
		if len(acc.Choices) != 1 {
			return msg, fmt.Errorf("%d choices streamed, want 1", len(acc.Choices))
		}
		msg = acc.Choices[0].Message
	} else {
		cc, err := p.client.Chat.Completions.New(ctx, p.params)
		if err != nil {
			return msg, err
		}
		if len(cc.Choices) != 1 {
			return msg, fmt.Errorf("%d choices, want 1", len(cc.Choices))
		}
		msg = cc.Choices[0].Message
	}
	p.params.Messages = append(p.params.Messages, msg.ToParam())
	return msg, nil
}

// appendResults appends a tool message per outcome, in call order, and
// logs each.
func (p *chatProgram) appendResults(outs []toolstage.Outcome) {
	for _, o := range outs {
		p.params.Messages = append(p.params.Messages, openaiToolMessage(o))
		p.outcomes = append(p.outcomes, o)
		p.t.Logf("%s: appended tool message for %s %s(%s): %q", p.name, o.Call.ID, o.Call.Name, o.Call.Args, o.Content)
	}
}

// openaiMaxTurns bounds the program's loop.
const openaiMaxTurns = 8

// run is the program's loop: ask the model; no calls, it answered; else
// hand the calls to the stage and append its outcomes as tool messages. A
// batch that pauses for a person returns its interrupt, and nothing of it
// is appended: [toolstage.Stage.Resume] gives every call's outcome, those
// that ran before the pause included, to append at once. ctx is the
// stage's Scope.
func (p *chatProgram) run(ctx context.Context) (answer string, in *toolstage.Interrupt, err error) {
	for range openaiMaxTurns {
		msg, err := p.ask(ctx)
		if err != nil {
			return "", nil, err
		}
		calls := openaiCalls(msg)
		if len(calls) == 0 {
			p.t.Logf("%s: answer: %q", p.name, msg.Content)
			return msg.Content, nil, nil
		}
		record := guard.CallRecordFrom(ctx)
		for _, c := range calls {
			p.validated = append(p.validated, record.Validated(c.ID, c.Name, string(c.Args)))
		}
		batch, err := p.stage.Run(ctx, calls)
		if err != nil {
			return "", nil, err
		}
		if batch.Interrupt != nil {
			return "", batch.Interrupt, nil
		}
		p.appendResults(batch.Outcomes)
	}
	return "", nil, fmt.Errorf("no answer after %d turns", openaiMaxTurns)
}

// transcript returns the conversation as JSON, as a program keeps it.
func (p *chatProgram) transcript() []byte {
	p.t.Helper()
	data, err := json.Marshal(p.params.Messages)
	if err != nil {
		p.t.Fatal(err)
	}
	return data
}

// restore sets the conversation from JSON that transcript returned.
func (p *chatProgram) restore(data []byte) {
	p.t.Helper()
	var msgs []openai.ChatCompletionMessageParamUnion
	if err := json.Unmarshal(data, &msgs); err != nil {
		p.t.Fatal(err)
	}
	p.params.Messages = msgs
}

// openaiEventLog records the events of a stage's handler (both stages', through
// Scope). It is safe for concurrent use: the calls of a batch report from
// their own goroutines.
type openaiEventLog struct {
	mu     sync.Mutex
	events []guard.Event
}

func (l *openaiEventLog) handle(_ context.Context, e guard.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// of returns the events of kind k, in the order reported.
func (l *openaiEventLog) of(k guard.EventKind) []guard.Event {
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

// kinds returns the kinds of every event, in the order reported.
func (l *openaiEventLog) kinds() []guard.EventKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]guard.EventKind, len(l.events))
	for i, e := range l.events {
		out[i] = e.Kind
	}
	return out
}

// text returns everything the events say, for a search of a value that
// must not be there.
func (l *openaiEventLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.events {
		fmt.Fprintf(&b, "%s %s %s %s %q %s", e.Kind, e.Middleware, e.Tool, e.CallID, e.Paths, e.Feedback)
		if e.Err != nil {
			b.WriteString(" " + e.Err.Error())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// openaiLogRequests logs every request srv received, its body as sent.
func openaiLogRequests(t *testing.T, srv *fp.Server) {
	t.Helper()
	for i, r := range srv.Requests() {
		t.Logf("request %d: %s %s (stream %v)\n%s", i+1, r.Method, r.Path, r.Stream, r.Body)
	}
}

// openaiRequestsHolding returns the numbers (from 1) of the requests srv
// received whose body holds s.
func openaiRequestsHolding(srv *fp.Server, s string) []int {
	var out []int
	for i, r := range srv.Requests() {
		if strings.Contains(string(r.Body), s) {
			out = append(out, i+1)
		}
	}
	return out
}

// openaiRequestTools returns the tools a Chat Completions request offered, by
// name: each function's parameters.
func openaiRequestTools(t *testing.T, body []byte) map[string]map[string]any {
	t.Helper()
	var req struct {
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body: %v\n%s", err, body)
	}
	out := make(map[string]map[string]any, len(req.Tools))
	for _, tl := range req.Tools {
		out[tl.Function.Name] = tl.Function.Parameters
	}
	return out
}

// openaiRequireRedisEnv turns a missing redis-server from a skip into a failure.
const openaiRequireRedisEnv = "TOOLGUARD_REQUIRE_REDIS"

// openaiRedisServer starts a redis-server of the test's own on a loopback
// port, stopped when the test ends; without one on the PATH it skips, or
// fails under TOOLGUARD_REQUIRE_REDIS=1.
func openaiRedisServer(t *testing.T) *redisserver.Server {
	t.Helper()
	s, err := redisserver.Start(t.TempDir())
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv(openaiRequireRedisEnv) == "1" {
			t.Fatalf("%v, and %s=1 requires the Redis tests to run", err, openaiRequireRedisEnv)
		}
		t.Skipf("skipping the test against a real Redis: %v (set %s=1 to make this a failure)", err, openaiRequireRedisEnv)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// openaiRedisClient returns a client of the server at addr, closed when the test
// ends: each "process" has its own.
func openaiRedisClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// openaiLedger is the world outside the processes (a bank, an order system):
// every tool run, in order, as "who tool args".
type openaiLedger struct {
	mu   sync.Mutex
	runs []string
}

func (l *openaiLedger) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, fmt.Sprintf(format, args...))
}

func (l *openaiLedger) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.runs)
}

// openaiMode is one way the program calls the model.
type openaiMode struct {
	name   string
	stream bool // Chat.Completions.NewStreaming, else Chat.Completions.New
}

// openaiModes returns the two ways the program calls the model, sync and
// streamed, for the tests to run each in both.
func openaiModes() []openaiMode {
	return []openaiMode{{"sync", false}, {"stream", true}}
}
