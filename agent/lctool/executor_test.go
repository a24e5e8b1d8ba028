package lctool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard/agent/lctool"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/mcptool"
)

// RefundArgs are a typed tool's arguments: the amount is a number.
type RefundArgs struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

// refunds records what the refund tool ran with.
type refunds struct {
	mu  sync.Mutex
	got []RefundArgs
}

func (r *refunds) tool() toolstage.Tool {
	return toolstage.NewTool("refund", "Refunds an order.", func(_ context.Context, a RefundArgs) (string, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, a)
		return fmt.Sprintf("refunded %.2f on %s", a.Amount, a.OrderID), nil
	})
}

// sumServer is an in-process MCP server with one tool, get-sum, whose
// inputSchema wants two numbers.
func sumTools(t *testing.T) []toolstage.Tool {
	t.Helper()
	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "sum", Version: "v1"}, nil)
	s.AddTool(&mcp.Tool{Name: "get-sum", Description: "Adds two numbers.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ A, B float64 }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	ts, err := mcptool.Tools(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestTypedToolsInLangchainExecutor runs an unchanged agents.Executor with
// OpenAIFunctionsAgent over a model offered, through OfferSchemas, a typed
// tool's and an MCP tool's own schemas: the model's "19,99" for a number
// and "seventeen" for the MCP tool's number (strings no default coercion
// reads as numbers) are re-asked and corrected before the
// Executor sees them, and the tools run once each with the typed values.
func TestTypedToolsInLangchainExecutor(t *testing.T) {
	t.Parallel()
	var rec refunds
	ts := append([]toolstage.Tool{rec.tool()}, sumTools(t)...)
	lcTools := make([]tools.Tool, len(ts))
	for i, tool := range ts {
		lcTools[i] = lctool.ToLangchain(tool)
	}
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("refund", `{"order_id": "A-1", "amount": "19,99"}`)),
		fakemodel.ToolCalls(fakemodel.Call("refund", `{"order_id": "A-1", "amount": 19.99}`)),
		fakemodel.ToolCalls(fakemodel.Call("get-sum", `{"a": "seventeen", "b": 25}`)),
		fakemodel.ToolCalls(fakemodel.Call("get-sum", `{"a": 17, "b": 25}`)),
		fakemodel.Text("Refunded 19.99; 17 + 25 = 42."),
	)
	var invalid []string
	llm := middleware.Wrap(m, lctool.OfferSchemas(ts...), middleware.ToolArgValidation(guard.WithEventHandler(
		func(_ context.Context, e guard.Event) {
			if e.Kind == guard.EventInvalid {
				invalid = append(invalid, e.Tool+": "+e.Err.Error())
			}
		})))
	ex := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(llm, lcTools), agents.WithMaxIterations(5))
	out, err := chains.Run(context.Background(), ex, "refund order A-1 and add 17 and 25")
	if err != nil || out != "Refunded 19.99; 17 + 25 = 42." {
		t.Fatalf("Executor answered %q, %v", out, err)
	}
	if len(rec.got) != 1 || rec.got[0] != (RefundArgs{OrderID: "A-1", Amount: 19.99}) {
		t.Errorf("refund ran with %+v, want once with 19.99", rec.got)
	}
	if len(invalid) != 2 || !strings.Contains(invalid[0], `/amount: expected number, got "19,99"`) || !strings.Contains(invalid[1], `/a: expected number, got "seventeen"`) {
		t.Errorf("invalid events %q, want the refund's amount and get-sum's a re-asked", invalid)
	}
	// What the model was offered: the typed schemas, not {"__arg1": string}.
	offered := m.Requests()[0].Options.Functions
	got := map[string]string{}
	for _, f := range offered {
		b, _ := json.Marshal(f.Parameters)
		got[f.Name] = string(b)
	}
	if !strings.Contains(got["refund"], `"amount":{"type":"number"}`) || !strings.Contains(got["get-sum"], `"a":{"type":"number"}`) ||
		strings.Contains(got["refund"]+got["get-sum"], "__arg1") {
		t.Errorf("offered %v, want the tools' own schemas", got)
	}
	// The MCP server's answer reached the model.
	last := m.Requests()[4].Messages
	if r, ok := last[len(last)-1].Parts[0].(llms.ToolCallResponse); !ok || r.Content != "42" {
		t.Errorf("last message %+v, want get-sum's result 42", last[len(last)-1])
	}
}

// TestExecutorWithoutOfferSchemas is what OfferSchemas fixes: offered
// {"__arg1": string}, the model sends its arguments as that string, the
// call passes validation, the typed tool rejects "19,99", and the Executor
// ends the run with the tool's error.
func TestExecutorWithoutOfferSchemas(t *testing.T) {
	t.Parallel()
	var rec refunds
	m := fakemodel.New(fakemodel.ToolCalls(fakemodel.Call("refund", `{"__arg1": "{\"order_id\": \"A-1\", \"amount\": \"19,99\"}"}`)))
	llm := middleware.Wrap(m, middleware.ToolArgValidation())
	ex := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{lctool.ToLangchain(rec.tool())}), agents.WithMaxIterations(5))
	_, err := chains.Run(context.Background(), ex, "refund order A-1")
	if err == nil || !strings.Contains(err.Error(), `/amount: expected number, got "19,99"`) || len(rec.got) != 0 {
		t.Errorf("Executor error %v (refund ran %d times), want the run aborted by the tool's validation error", err, len(rec.got))
	}
}

// OfferSchemas leaves tools it does not know, and requests without tools,
// as they are, and refuses nil tools and duplicate names.
func TestOfferSchemasLeavesOthers(t *testing.T) {
	t.Parallel()
	var rec refunds
	m := fakemodel.New(fakemodel.Text("a"), fakemodel.Text("b"))
	llm := middleware.Wrap(m, lctool.OfferSchemas(rec.tool()))
	other := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: "other", Parameters: map[string]any{"type": "object"}}}
	if _, err := llm.GenerateContent(context.Background(), nil, llms.WithTools([]llms.Tool{other})); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.GenerateContent(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := m.Requests()[0].Options.Tools; len(got) != 1 || got[0].Function != other.Function {
		t.Errorf("tools %+v, want the request's own, untouched", got)
	}
	for _, bad := range [][]toolstage.Tool{{nil}, {rec.tool(), rec.tool()}} {
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.HasPrefix(msg, "lctool: OfferSchemas: ") {
					t.Errorf("OfferSchemas(%v) panicked with %q, want a clear message", bad, msg)
				}
			}()
			lctool.OfferSchemas(bad...)
		}()
	}
}

// OrderArgs' user id is injected in an agent.Agent (toolstage.Inject), which
// agents.Executor cannot do.
type OrderArgs struct {
	Item   string `json:"item"`
	UserID string `json:"user_id" toolguard:"inject"`
}

// TestInjectedArgsRefused is the attack: a tool whose user_id the program
// injects in an agent.Agent, used in agents.Executor, where nothing injects
// it. OfferSchemas would offer the model user_id, and the tool would run
// with the model's "admin"; both refuse such a tool instead.
func TestInjectedArgsRefused(t *testing.T) {
	t.Parallel()
	var got []string
	typed := toolstage.NewTool("order", "Order an item.", func(_ context.Context, a OrderArgs) (string, error) {
		got = append(got, a.UserID)
		return "ordered", nil
	})
	raw := toolstage.InjectArgs(toolstage.NewSchemaTool("cancel", "Cancel an order.",
		`{"type": "object", "properties": {"order_id": {"type": "string"}}}`,
		func(_ context.Context, a map[string]any) (string, error) {
			got = append(got, fmt.Sprint(a["user_id"]))
			return "cancelled", nil
		}), "user_id")
	for _, tool := range []toolstage.Tool{typed, raw} {
		for name, use := range map[string]func(){
			"OfferSchemas": func() {
				m := fakemodel.New(fakemodel.Text("ok"))
				llm := middleware.Wrap(m, lctool.OfferSchemas(tool))
				def := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: tool.Name(), Parameters: map[string]any{"type": "object"}}}
				if _, err := llm.GenerateContent(context.Background(), nil, llms.WithTools([]llms.Tool{def})); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(m.Requests()[0].Options.Tools)
				t.Errorf("OfferSchemas(%s) offered the model %s", tool.Name(), b)
			},
			"ToLangchain": func() {
				out, err := lctool.ToLangchain(tool).Call(context.Background(), `{"item": "tea", "order_id": "A-1", "user_id": "admin"}`)
				t.Errorf("ToLangchain(%s).Call = %q, %v; the tool got user ids %q", tool.Name(), out, err, got)
			},
		} {
			func() {
				defer func() {
					if msg, _ := recover().(string); !strings.Contains(msg, "injected") {
						t.Errorf("%s(%s) panicked with %q, want a message about its injected argument", name, tool.Name(), msg)
					}
				}()
				use()
			}()
		}
	}
}
