package lctool_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/tools"
	"github.com/toolguard/toolguard/agent/lctool"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/validation"
)

// jsonRefund is an existing langchaingo tool that reads a JSON object from
// its one string input, as a tool written for OpenAIFunctionsAgent does.
type jsonRefund struct {
	mu  sync.Mutex
	got []string
}

func (*jsonRefund) Name() string { return "refund" }
func (*jsonRefund) Description() string {
	return "Refunds an order: a JSON object with order_id and amount."
}
func (r *jsonRefund) Call(_ context.Context, input string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, input)
	var a RefundArgs
	if err := json.Unmarshal([]byte(input), &a); err != nil {
		return "", err
	}
	return "refunded", nil
}

var _ tools.Tool = (*jsonRefund)(nil)

// An unchanged agents.Executor keeps its existing tools.Tool; SchemaFor
// gives its schema beside it, so the model is offered the typed schema and
// a bad call is re-asked before the tool runs.
func TestSchemaForExistingTool(t *testing.T) {
	t.Parallel()
	refund := &jsonRefund{}
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("refund", `{"order_id": "A-1"}`)),
		fakemodel.ToolCalls(fakemodel.Call("refund", `{"order_id": "A-1", "amount": "19.99"}`)),
		fakemodel.Text("Refunded."),
	)
	var invalid, misconfigured []string
	llm := middleware.Wrap(m,
		lctool.OfferSchemas(lctool.SchemaFor(refund, validation.Typed[RefundArgs]())),
		middleware.ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) {
			switch e.Kind {
			case guard.EventInvalid:
				invalid = append(invalid, e.Err.Error())
			case guard.EventMisconfigured:
				misconfigured = append(misconfigured, e.Err.Error())
			}
		})))
	ex := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{refund}), agents.WithMaxIterations(5))
	if out, err := chains.Run(context.Background(), ex, "refund order A-1"); err != nil || out != "Refunded." {
		t.Fatalf("Executor answered %q, %v", out, err)
	}
	if len(refund.got) != 1 || refund.got[0] != `{"amount":19.99,"order_id":"A-1"}` {
		t.Errorf("the tool got %q, want one call with the corrected, coerced JSON", refund.got)
	}
	if len(invalid) != 1 || !strings.Contains(invalid[0], "/amount: missing required property") {
		t.Errorf("invalid events %q, want the missing amount re-asked", invalid)
	}
	if len(misconfigured) != 0 {
		t.Errorf("misconfigured events %q, want none: the tool's schema is offered", misconfigured)
	}
}

// Without it, the Executor offers {"__arg1": string}: ToolArgValidation
// says so once, naming the fix.
func TestStringPlaceholderReported(t *testing.T) {
	t.Parallel()
	refund := &jsonRefund{}
	m := fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("refund", `{"__arg1": "{\"order_id\": \"A-1\"}"}`)),
		fakemodel.Text("Done."),
	)
	var misconfigured []string
	llm := middleware.Wrap(m, middleware.ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		if e.Kind == guard.EventMisconfigured {
			misconfigured = append(misconfigured, e.Err.Error())
		}
	})))
	ex := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{refund}), agents.WithMaxIterations(5))
	if _, err := chains.Run(context.Background(), ex, "refund order A-1"); err != nil {
		t.Fatal(err)
	}
	if len(misconfigured) != 1 || !strings.Contains(misconfigured[0], "lctool.SchemaFor") || !strings.Contains(misconfigured[0], `"refund"`) {
		t.Errorf("misconfigured events %q, want one naming the tool and lctool.SchemaFor", misconfigured)
	}
}
