package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/repair"
)

// fuzzTools are the tools FuzzReask offers: the eight BFCL tools of
// testdata/fuzz_schemas.json (written by validation's TestUpdateFuzzSeeds),
// get_weather, a tool without a schema and one whose schema cannot compile.
var fuzzTools = sync.OnceValues(func() ([]llms.Tool, error) {
	b, err := os.ReadFile("testdata/fuzz_schemas.json")
	if err != nil {
		return nil, err
	}
	var defs []struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(b, &defs); err != nil {
		return nil, err
	}
	tools := []llms.Tool{weatherTool, tool("anything", nil), tool("broken", `{"$ref": "http://127.0.0.1:9/x.json"}`)}
	for _, d := range defs {
		tools = append(tools, tool(d.Name, d.Parameters))
	}
	return tools, nil
})

// FuzzReask sends arbitrary model responses — any names, ids, arguments and
// text, calls spread over choices, nil choices, nil FunctionCalls, legacy
// FuncCalls — through ToolArgValidation, and checks that nothing panics,
// that every re-ask replays each tool call in an AI message immediately
// followed by the tool message answering it under the same, non-empty id,
// that model-supplied text in those answers is bounded, and that every tool
// call handed back has an id.
//
// calls holds records separated by \x1e, each "name\x1fid\x1farguments";
// the name "\x00" stands for a nil FunctionCall. shape's bits choose the
// layout and the options (see below), WithRepair included.
func FuzzReask(f *testing.F) {
	tools, err := fuzzTools()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("", "get_weather\x1f\x1f{\"city\": 42}", uint8(0))
	f.Add("thinking", "get_weather\x1fa\x1f{\"city\": \"x\"}\x1esearch\x1fa\x1f{}\x1e\x00\x1f\x1f", uint8(0b0110))
	f.Add("", "get_wether\x1f\x1f{}\x1ebroken\x1fb\x1f[]", uint8(0b11001))
	f.Add("x", "anything\x1f\x1f{\"a\": 1, \"a\": 2}\x1eget_weather\x1f\x1f{\"city\": \"P\", \"city\": 1}", uint8(0b100000))
	f.Add("", "get_weather\x1f\x1f```json\n{'city': 'Paris', 'days': '3',}\n```\x1eget_weather\x1f\x1f{'city': 'Rome', 'city': 'Paris'}", uint8(0b10100000))
	f.Fuzz(func(t *testing.T, text, calls string, shape uint8) {
		perChoice := shape&1 != 0      // one choice per call, as Anthropic answers
		nilChoice := shape&2 != 0      // a nil choice in front
		legacy := shape&4 != 0         // a first choice with only the legacy FuncCall
		failClosed := shape&8 != 0     // WithFailClosed
		reject := shape&16 != 0        // WithUnknownTools(UnknownReject)
		retries := int(shape>>5&3) % 3 // WithMaxRetries(0..2)
		repairs := shape&128 != 0      // WithRepair(repair.Default())

		var tcs []llms.ToolCall
		if calls != "" {
			for _, rec := range strings.Split(calls, "\x1e") {
				name, rest, _ := strings.Cut(rec, "\x1f")
				id, args, _ := strings.Cut(rest, "\x1f")
				tc := llms.ToolCall{ID: id, Type: "function"}
				if name != "\x00" {
					tc.FunctionCall = &llms.FunctionCall{Name: name, Arguments: args}
				}
				tcs = append(tcs, tc)
			}
		}
		resp := &llms.ContentResponse{}
		if nilChoice {
			resp.Choices = append(resp.Choices, nil)
		}
		if legacy && len(tcs) > 0 && tcs[0].FunctionCall != nil {
			fn := *tcs[0].FunctionCall
			resp.Choices = append(resp.Choices, &llms.ContentChoice{Content: text, FuncCall: &fn})
			tcs = tcs[1:]
			text = ""
		}
		if perChoice {
			for i, tc := range tcs {
				ch := &llms.ContentChoice{ToolCalls: []llms.ToolCall{tc}}
				if i == 0 {
					ch.Content = text
				}
				resp.Choices = append(resp.Choices, ch)
			}
		} else {
			resp.Choices = append(resp.Choices, &llms.ContentChoice{Content: text, ToolCalls: tcs})
		}

		steps := make([]fakemodel.Step, retries+1)
		for i := range steps {
			steps[i] = fakemodel.Response(resp)
		}
		m := fakemodel.New(steps...)
		opts := []guard.ValidationOption{guard.WithMaxRetries(retries)}
		if failClosed {
			opts = append(opts, guard.WithFailClosed())
		}
		if reject {
			opts = append(opts, guard.WithUnknownTools(guard.UnknownReject))
		}
		if repairs {
			opts = append(opts, guard.WithRepair(repair.Default()))
		}
		out, err := middleware.Wrap(m, middleware.ToolArgValidation(opts...)).
			GenerateContent(context.Background(), question, llms.WithTools(tools))

		var invalid *guard.InvalidToolCallsError
		var schemaErr *guard.SchemaError
		switch {
		case err == nil:
			if out == nil {
				t.Fatal("nil response and nil error")
			}
			for _, ch := range out.Choices {
				if ch == nil {
					continue
				}
				for _, tc := range ch.ToolCalls {
					if tc.ID == "" {
						t.Fatalf("a tool call was handed back without an id: %+v", tc)
					}
				}
			}
		case errors.As(err, &invalid) && failClosed, errors.As(err, &schemaErr) && failClosed:
		default:
			t.Fatalf("GenerateContent error = %v, want nil or, failing closed, an invalid-calls or schema error", err)
		}

		for n, req := range m.Requests()[1:] {
			msgs := req.Messages
			if len(msgs) < len(question) {
				t.Fatalf("re-ask %d has %d messages, fewer than the question", n+1, len(msgs))
			}
			replay := msgs[len(question):]
			for i := 0; i < len(replay); i++ {
				mc := replay[i]
				var call *llms.ToolCall
				for _, p := range mc.Parts {
					if tc, ok := p.(llms.ToolCall); ok {
						if call != nil {
							t.Fatalf("re-ask %d: message %d holds more than one tool call", n+1, i)
						}
						call = &tc
					}
				}
				if call == nil {
					if mc.Role == llms.ChatMessageTypeTool {
						t.Fatalf("re-ask %d: tool message %d follows no tool call", n+1, i)
					}
					continue
				}
				if mc.Role != llms.ChatMessageTypeAI || call.ID == "" {
					t.Fatalf("re-ask %d: tool call %+v in a %s message; want a non-empty id in an AI message", n+1, call, mc.Role)
				}
				if i+1 == len(replay) || replay[i+1].Role != llms.ChatMessageTypeTool || len(replay[i+1].Parts) != 1 {
					t.Fatalf("re-ask %d: tool call %q is not followed by one tool message", n+1, call.ID)
				}
				answer, ok := replay[i+1].Parts[0].(llms.ToolCallResponse)
				if !ok || answer.ToolCallID != call.ID {
					t.Fatalf("re-ask %d: tool call %q answered by %+v", n+1, call.ID, replay[i+1].Parts[0])
				}
				if strings.HasPrefix(answer.Content, "Invalid arguments") && len(answer.Content) > errfmt.DefaultMaxBytes {
					t.Fatalf("re-ask %d: feedback of %d bytes, want <= %d", n+1, len(answer.Content), errfmt.DefaultMaxBytes)
				}
				i++
			}
		}
	})
}
