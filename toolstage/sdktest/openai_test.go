package sdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"github.com/toolguard/toolguard/toolstage"
)

// openai-go, Chat Completions, a loop of the program's own
// (chatProgram.run) over a toolstage.Stage through httpguard. Each test
// runs sync (Chat.Completions.New) and streamed (Chat.Completions.
// NewStreaming into a ChatCompletionAccumulator).

// openaiWeatherArgs are get_weather's arguments.
type openaiWeatherArgs struct {
	City string `json:"city"`
	Days int    `json:"days,omitempty"`
}

// A call whose city is a number is re-asked by httpguard inside one SDK
// call: the program never sees it, the stage runs only the corrected call,
// and runs it as httpguard validated it, its days coerced from "3" to 3
// (the call record holds exactly the arguments the SDK read).
func TestOpenAIChatReaskRunsOnlyCorrectedCall(t *testing.T) {
	t.Parallel()
	for _, mode := range openaiModes() {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(
				fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": 42}`)),
				fp.Reply(fp.Call("get_weather", `{"city": "Paris", "days": "3"}`)),
				fp.Reply(fp.Text("It is sunny in Paris.")),
			)
			defer srv.Close()
			world := &openaiLedger{}
			weather := toolstage.NewTool("get_weather", "The current weather of a city.",
				func(_ context.Context, a openaiWeatherArgs) (string, error) {
					world.add("get_weather %s %d", a.City, a.Days)
					return fmt.Sprintf("sunny, 21 C in %s for %d days", a.City, a.Days), nil
				})
			var events openaiEventLog
			stage := toolstage.New([]toolstage.Tool{weather}, toolstage.WithEventHandler(events.handle))
			p := newChatProgram(t, "program", srv, stage, mode.stream, "Weather in Paris?")

			answer, in, err := p.run(stage.Scope(context.Background()))
			openaiLogRequests(t, srv)
			if err != nil || in != nil {
				t.Fatalf("run: %v (interrupt %v)", err, in)
			}
			if answer != "It is sunny in Paris." {
				t.Errorf("answer %q", answer)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("the provider got %d requests, want 3 (the first turn, its re-ask, the second turn)", len(reqs))
			}
			if !strings.Contains(string(reqs[1].Body), "/city: expected string, got 42") {
				t.Errorf("the re-ask does not carry the violation:\n%s", reqs[1].Body)
			}
			// The bad call (call_1) is in the re-ask httpguard built, never
			// in the program's conversation.
			if got := openaiRequestsHolding(srv, `"call_1"`); !slices.Equal(got, []int{2}) {
				t.Errorf("call_1 is in requests %v, want [2] (the re-ask only)", got)
			}
			if got := world.list(); !slices.Equal(got, []string{"get_weather Paris 3"}) {
				t.Errorf("tool runs %q, want the corrected call's only", got)
			}
			if !slices.Equal(p.validated, []bool{true}) {
				t.Errorf("httpguard validated the calls handed to the stage: %v, want [true]", p.validated)
			}
			if len(p.outcomes) != 1 || p.outcomes[0].Call.ID != "call_2" || p.outcomes[0].Err != nil ||
				string(p.outcomes[0].Call.Args) != `{"city":"Paris","days":3}` {
				t.Errorf("outcomes %+v, want call_2's as httpguard wrote it back, without error", p.outcomes)
			}
			last := string(reqs[2].Body)
			if !strings.Contains(last, `"tool_call_id":"call_2"`) || !strings.Contains(last, "sunny, 21 C in Paris for 3 days") {
				t.Errorf("the second turn does not carry the tool message:\n%s", last)
			}
			// Through Scope, httpguard reports to the stage's handler.
			if len(events.of(guard.EventInvalid)) != 1 || len(events.of(guard.EventReask)) != 1 {
				t.Errorf("the stage's handler got %v, want one invalid and one reask", events.kinds())
			}
		})
	}
}

// openaiOrdersArgs are list_orders' arguments: user_id is the signed-in
// user's, injected by the program.
type openaiOrdersArgs struct {
	Status string `json:"status"`
	UserID string `json:"user_id" toolguard:"inject"`
}

// openaiUserKey is the context key of the program's signed-in user.
type openaiUserKey struct{}

// user_id is injected from the program's context: the provider is never
// offered it, a model that sets it anyway does not get it through (the
// tool runs as the signed-in user, a forged_argument event names the call
// and never the value), and neither value ever reaches the provider, in
// the program's transcript or in the re-ask httpguard builds of a call
// that forged it and had a bad status.
func TestOpenAIChatInjectedUserID(t *testing.T) {
	t.Parallel()
	for _, mode := range openaiModes() {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(
				fp.Reply(fp.Call("list_orders", `{"status": 7, "user_id": "u-attacker"}`)),
				fp.Reply(fp.Call("list_orders", `{"status": "open", "user_id": "u-attacker"}`)),
				fp.Reply(fp.Text("You have 2 open orders.")),
			)
			defer srv.Close()
			world := &openaiLedger{}
			orders := toolstage.NewTool("list_orders", "The signed-in user's orders with a status.",
				func(_ context.Context, a openaiOrdersArgs) (string, error) {
					world.add("list_orders %s %s", a.UserID, a.Status)
					return "2 open orders: #1001, #1002", nil
				})
			var events openaiEventLog
			stage := toolstage.New([]toolstage.Tool{orders},
				toolstage.Inject("user_id", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) {
					u, ok := ctx.Value(openaiUserKey{}).(string)
					if !ok {
						return nil, errors.New("no signed-in user")
					}
					return u, nil
				}),
				toolstage.WithEventHandler(events.handle))
			p := newChatProgram(t, "program", srv, stage, mode.stream, "My open orders?")

			ctx := context.WithValue(context.Background(), openaiUserKey{}, "u-alice")
			answer, in, err := p.run(stage.Scope(ctx))
			openaiLogRequests(t, srv)
			if err != nil || in != nil {
				t.Fatalf("run: %v (interrupt %v)", err, in)
			}
			if answer != "You have 2 open orders." {
				t.Errorf("answer %q", answer)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("the provider got %d requests, want 3 (the first turn, the re-ask of its bad status, the second turn)", len(reqs))
			}
			if !strings.Contains(string(reqs[1].Body), "/status: expected string, got 7") {
				t.Errorf("the re-ask does not carry the violation:\n%s", reqs[1].Body)
			}
			params := openaiRequestTools(t, reqs[0].Body)["list_orders"]
			props, _ := params["properties"].(map[string]any)
			if _, ok := props["status"]; !ok || len(props) != 1 || slices.Contains(toStrings(params["required"]), "user_id") {
				t.Errorf("list_orders was offered %v, want status alone", params)
			}
			for _, s := range []string{"user_id", "u-attacker", "u-alice"} {
				if got := openaiRequestsHolding(srv, s); got != nil {
					t.Errorf("%q reached the provider in requests %v", s, got)
				}
			}
			if got := world.list(); !slices.Equal(got, []string{"list_orders u-alice open"}) {
				t.Errorf("tool runs %q, want one as u-alice", got)
			}
			if len(p.outcomes) != 1 {
				t.Fatalf("%d outcomes", len(p.outcomes))
			}
			o := p.outcomes[0]
			if strings.Contains(string(o.Call.Args), "user_id") || !strings.Contains(string(o.Args), `"user_id":"u-alice"`) {
				t.Errorf("outcome: call %s (what a transcript records), ran with %s (the program's)", o.Call.Args, o.Args)
			}
			// One event per call that forged it: the re-asked one and the one run.
			var forged []string
			for _, e := range events.of(guard.EventForgedArgument) {
				forged = append(forged, fmt.Sprintf("%s %s %s", e.Tool, e.CallID, e.Paths))
			}
			if want := []string{"list_orders call_1 [/user_id]", "list_orders call_2 [/user_id]"}; !slices.Equal(forged, want) {
				t.Errorf("forged_argument events %q, want %q", forged, want)
			}
			if text := events.text(); strings.Contains(text, "u-attacker") {
				t.Errorf("an event quotes the forged value:\n%s", text)
			}
			t.Logf("events: %s", events.text())
		})
	}
}

// toStrings returns v's strings, v a JSON array.
func toStrings(v any) []string {
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// openaiBalanceArgs and openaiTransferArgs are the bank tools' arguments.
type openaiBalanceArgs struct {
	Account string `json:"account"`
}

type openaiTransferArgs struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

// openaiBankTools returns the bank's tools as process builds them, each
// run recorded in world with the process's name.
func openaiBankTools(process string, world *openaiLedger) []toolstage.Tool {
	return []toolstage.Tool{
		toolstage.NewTool("get_balance", "An account's balance.", func(_ context.Context, a openaiBalanceArgs) (string, error) {
			world.add("%s get_balance %s", process, a.Account)
			return fmt.Sprintf("%s: 1200 EUR", a.Account), nil
		}),
		toolstage.NewTool("transfer_money", "Send money from checking.", func(_ context.Context, a openaiTransferArgs) (string, error) {
			world.add("%s transfer_money %s %d", process, a.To, a.Amount)
			return fmt.Sprintf("sent %d EUR to %s", a.Amount, a.To), nil
		}),
	}
}

// openaiInterruptKey is the bank's interrupt key, which every process of
// it has.
const openaiInterruptKey = "the application's 32-byte secret"

// openaiBankProcess is one process of the bank's program: a Stage of its
// own (the same tools, key and redis-server as every other process), its
// own client through httpguard, its own Redis connection, its own events.
type openaiBankProcess struct {
	*chatProgram
	events *openaiEventLog
}

// startOpenAIBankProcess starts process name: transfer_money waits for a
// person, interrupts are signed and kept on the redis-server at redisAddr,
// and the tools' runs go to world.
func startOpenAIBankProcess(t *testing.T, name string, srv *fp.Server, redisAddr string, world *openaiLedger, stream bool) openaiBankProcess {
	t.Helper()
	events := &openaiEventLog{}
	stage := toolstage.New(openaiBankTools(name, world),
		toolstage.WithApprovalFor("transfer_money"),
		toolstage.WithMaxConcurrency(1), // the ledger's order is the calls'
		toolstage.WithInterruptKey([]byte(openaiInterruptKey)),
		toolstage.WithCheckpointer(redisstore.NewCheckpointer(openaiRedisClient(t, redisAddr))),
		toolstage.WithEventHandler(events.handle))
	return openaiBankProcess{newChatProgram(t, name, srv, stage, stream, "Pay bob 50 EUR, and tell me my balances."), events}
}

// openaiAcceptAll returns a decision accepting each pending call of in.
func openaiAcceptAll(in *toolstage.Interrupt) []toolstage.Decision {
	var ds []toolstage.Decision
	for _, p := range in.Pending {
		ds = append(ds, toolstage.Decision{CallID: p.ID, Action: toolstage.Accept, Digest: p.Digest})
	}
	return ds
}

// transfer_money waits for a person: process A's Stage pauses the batch
// (its other calls run), the interrupt travels as JSON with the program's
// transcript attached, and process B — another Stage value, another
// client, another Redis connection, the same tools, key and redis-server —
// resumes it: every call's outcome in call order, the transfer run once,
// the loop finished. A tampered interrupt, and the genuine one replayed on
// either process, are refused and run nothing.
func TestOpenAIChatApprovalAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, mode := range openaiModes() {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			rs := openaiRedisServer(t)
			srv := fp.New(
				fp.Reply(fp.Text("Checking, then paying."),
					fp.Call("get_balance", `{"account": "checking"}`),
					fp.Call("transfer_money", `{"to": "bob", "amount": 50}`),
					fp.Call("get_balance", `{"account": "savings"}`)),
				fp.Reply(fp.Text("Sent 50 EUR to bob; checking and savings hold 1200 EUR each.")),
			)
			defer srv.Close()
			world := &openaiLedger{} // the bank both processes act on
			start := func(name string) openaiBankProcess {
				return startOpenAIBankProcess(t, name, srv, rs.Addr(), world, mode.stream)
			}
			ctx := context.Background()

			// Process A: the batch pauses.
			a := start("process A")
			_, in, err := a.run(a.stage.Scope(ctx))
			if err != nil || in == nil {
				t.Fatalf("process A: run: %v, interrupt %v; want a pause", err, in)
			}
			for _, p := range in.Pending {
				t.Logf("process A: paused: %s %s(%s) awaits a decision", p.ID, p.Tool, p.Args)
			}
			t.Logf("process A: tool runs so far %q", world.list())
			if len(in.Pending) != 1 || in.Pending[0].Tool != "transfer_money" || len(in.State) != 0 {
				t.Fatalf("process A: interrupt %+v, want transfer_money pending and its state in Redis", in)
			}
			if ev := a.events.of(guard.EventApprovalPending); len(ev) != 1 || ev[0].CallID != "call_2" {
				t.Errorf("process A: approval_pending events %+v, want one for call_2", ev)
			}
			a.stage.Attach(in, a.transcript()) // the program's own state, signed with the interrupt
			data, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("process A: interrupt handed on as %d bytes of JSON", len(data))
			received := func() *toolstage.Interrupt { // what process B reads
				var in toolstage.Interrupt
				if err := json.Unmarshal(data, &in); err != nil {
					t.Fatal(err)
				}
				return &in
			}
			ranInA := []string{"process A get_balance checking", "process A get_balance savings"}
			if got := world.list(); !slices.Equal(got, ranInA) {
				t.Fatalf("tool runs %q, want %q", got, ranInA)
			}

			// Process B: a tampered copy is refused, the genuine one resumed.
			b := start("process B")
			ctxB := b.stage.Scope(ctx)
			tampered := received()
			tampered.Pending[0].Args = json.RawMessage(`{"amount":5000,"to":"mallory"}`)
			if _, err := b.stage.Resume(ctxB, tampered, openaiAcceptAll(tampered)...); !errors.Is(err, toolstage.ErrInterruptRefused) {
				t.Fatalf("process B: tampered interrupt: %v, want ErrInterruptRefused", err)
			} else {
				t.Logf("process B: tampered interrupt (amount 5000 to mallory) refused: %v", err)
			}
			genuine := received()
			batch, err := b.stage.Resume(ctxB, genuine, openaiAcceptAll(genuine)...)
			if err != nil || batch.Interrupt != nil {
				t.Fatalf("process B: resume: %v, interrupt %v", err, batch)
			}
			t.Logf("process B: resumed, %d outcomes", len(batch.Outcomes))
			var order []string
			for i, o := range batch.Outcomes {
				order = append(order, fmt.Sprintf("%d %s %s", o.Index, o.Call.ID, o.Call.Name))
				if o.Index != i || o.Err != nil {
					t.Errorf("outcome %d: %+v", i, o)
				}
			}
			if want := []string{"0 call_1 get_balance", "1 call_2 transfer_money", "2 call_3 get_balance"}; !slices.Equal(order, want) {
				t.Errorf("outcomes %q, want %q (every call, in call order)", order, want)
			}
			b.restore(genuine.Host) // verified by Resume: signed with the interrupt
			b.appendResults(batch.Outcomes)
			answer, again, err := b.run(ctxB)
			if err != nil || again != nil {
				t.Fatalf("process B: run: %v, interrupt %v", err, again)
			}
			if answer != "Sent 50 EUR to bob; checking and savings hold 1200 EUR each." {
				t.Errorf("process B: answer %q", answer)
			}

			// The interrupt replayed, on either process: refused.
			for _, p := range []openaiBankProcess{b, a} {
				replay := received()
				if _, err := p.stage.Resume(p.stage.Scope(ctx), replay, openaiAcceptAll(replay)...); !errors.Is(err, toolstage.ErrInterruptRefused) {
					t.Errorf("%s: replayed interrupt: %v, want ErrInterruptRefused", p.name, err)
				} else {
					t.Logf("%s: replayed interrupt refused: %v", p.name, err)
				}
			}
			want := append(ranInA, "process B transfer_money bob 50")
			if got := world.list(); !slices.Equal(got, want) {
				t.Errorf("tool runs %q, want %q: each call once", got, want)
			}
			if n, m := len(b.events.of(guard.EventApprovalRefused)), len(a.events.of(guard.EventApprovalRefused)); n != 2 || m != 1 {
				t.Errorf("approval_refused events: process B %d, process A %d; want 2 and 1", n, m)
			}
			openaiLogRequests(t, srv)
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the provider got %d requests, want 2 (A's turn, B's)", len(reqs))
			}
			// B's turn carries one tool message per call, in call order.
			body := string(reqs[1].Body)
			i1, i2, i3 := strings.Index(body, `"tool_call_id":"call_1"`), strings.Index(body, `"tool_call_id":"call_2"`), strings.Index(body, `"tool_call_id":"call_3"`)
			if i1 < 0 || i2 < i1 || i3 < i2 || !strings.Contains(body, "sent 50 EUR to bob") {
				t.Errorf("process B's turn does not carry the three tool messages in order:\n%s", body)
			}
		})
	}
}

// openaiRateArgs and openaiChargeArgs are the retry test's tools' arguments.
type openaiRateArgs struct {
	Currency string `json:"currency"`
}

type openaiChargeArgs struct {
	Amount int `json:"amount"`
}

// ToolRetry repeats an Idempotent tool's transient failure, and never a
// tool that is not idempotent and timed out: its outcome is unknown, it
// ran once, and the model reads that it must check before repeating it.
func TestOpenAIChatToolRetryIdempotentOnly(t *testing.T) {
	t.Parallel()
	for _, mode := range openaiModes() {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			srv := fp.New(
				fp.Reply(fp.Call("get_rate", `{"currency": "USD"}`), fp.Call("charge_card", `{"amount": 50}`)),
				fp.Reply(fp.Text("The rate is 1.08; the charge may or may not have gone through.")),
			)
			defer srv.Close()
			world := &openaiLedger{}
			var rateRuns atomic.Int32
			rate := toolstage.Idempotent(toolstage.NewTool("get_rate", "The EUR exchange rate.",
				func(_ context.Context, a openaiRateArgs) (string, error) {
					world.add("get_rate %s", a.Currency)
					if rateRuns.Add(1) == 1 { // the first run fails, transiently
						return "", errors.New("rates API: status 503")
					}
					return "1 EUR = 1.08 " + a.Currency, nil
				}))
			charge := toolstage.NewTool("charge_card", "Charge the card on file.",
				func(_ context.Context, a openaiChargeArgs) (string, error) {
					world.add("charge_card %d", a.Amount)
					return "", fmt.Errorf("card processor: %w", os.ErrDeadlineExceeded)
				})
			var events openaiEventLog
			stage := toolstage.New([]toolstage.Tool{rate, charge},
				toolstage.WithMaxConcurrency(1), // the ledger's order is the calls'
				toolstage.WithToolMiddleware(toolstage.ToolRetry(
					toolstage.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }))),
				toolstage.WithEventHandler(events.handle))
			p := newChatProgram(t, "program", srv, stage, mode.stream, "Charge 50 USD worth, and what is the rate?")

			if _, _, err := p.run(stage.Scope(context.Background())); err != nil {
				t.Fatal(err)
			}
			openaiLogRequests(t, srv)
			if got, want := world.list(), []string{"get_rate USD", "get_rate USD", "charge_card 50"}; !slices.Equal(got, want) {
				t.Errorf("tool runs %q, want %q: get_rate retried, charge_card once", got, want)
			}
			if len(p.outcomes) != 2 {
				t.Fatalf("%d outcomes, want 2", len(p.outcomes))
			}
			if o := p.outcomes[0]; o.Err != nil || o.Content != "1 EUR = 1.08 USD" {
				t.Errorf("get_rate: %q, %v; want the second attempt's result", o.Content, o.Err)
			}
			var unknown *toolstage.OutcomeUnknownError
			if o := p.outcomes[1]; !errors.As(o.Err, &unknown) || unknown.Tool != "charge_card" || !errors.Is(o.Err, os.ErrDeadlineExceeded) ||
				!strings.Contains(o.Content, "outcome is unknown") {
				t.Errorf("charge_card: %q, %v; want an OutcomeUnknownError", o.Content, o.Err)
			}
			retried, unknownEv := events.of(guard.EventToolRetry), events.of(guard.EventToolOutcomeUnknown)
			if len(retried) != 1 || retried[0].Tool != "get_rate" || len(unknownEv) != 1 || unknownEv[0].Tool != "charge_card" {
				t.Errorf("events %v, want a tool_retry of get_rate and a tool_outcome_unknown of charge_card", events.kinds())
			}
			if last := string(srv.Requests()[1].Body); !strings.Contains(last, "outcome is unknown") {
				t.Errorf("the model is not told the charge's outcome is unknown:\n%s", last)
			}
		})
	}
}

// Two processes resume the same interrupt at once, each having checked it
// first (Stage.Decide: the signature, the state in Redis, the decisions;
// nothing claimed yet): the claim in Redis lets exactly one run the
// transfer, and the other is refused and runs nothing.
func TestOpenAIChatApprovalClaimedOnceAcrossProcesses(t *testing.T) {
	t.Parallel()
	rs := openaiRedisServer(t)
	srv := fp.New(fp.Reply(fp.Call("transfer_money", `{"to": "bob", "amount": 50}`)))
	defer srv.Close()
	world := &openaiLedger{}
	ctx := context.Background()
	a := startOpenAIBankProcess(t, "process A", srv, rs.Addr(), world, false)
	_, in, err := a.run(a.stage.Scope(ctx))
	if err != nil || in == nil {
		t.Fatalf("process A: run: %v, interrupt %v; want a pause", err, in)
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	b := startOpenAIBankProcess(t, "process B", srv, rs.Addr(), world, false)
	var decided []*toolstage.Decided
	for _, p := range []openaiBankProcess{a, b} {
		var in toolstage.Interrupt
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatal(err)
		}
		d, err := p.stage.Decide(p.stage.Scope(ctx), &in, openaiAcceptAll(&in)...)
		if err != nil {
			t.Fatalf("%s: decide: %v", p.name, err)
		}
		decided = append(decided, d)
	}
	start := make(chan struct{})
	errs := make(chan error, len(decided))
	for _, d := range decided {
		go func() {
			<-start
			_, err := d.Run(ctx)
			errs <- err
		}()
	}
	close(start)
	var won, refused int
	for range decided {
		switch err := <-errs; {
		case err == nil:
			won++
		case errors.Is(err, toolstage.ErrInterruptRefused):
			refused++
			t.Logf("the other resume: %v", err)
		default:
			t.Errorf("resume: %v", err)
		}
	}
	if won != 1 || refused != 1 {
		t.Errorf("%d resumes ran and %d were refused, want 1 and 1", won, refused)
	}
	if got := world.list(); len(got) != 1 || !strings.HasSuffix(got[0], "transfer_money bob 50") {
		t.Errorf("tool runs %q, want one transfer", got)
	}
}

// openaiInvoiceArgs are pay_invoice's arguments: user_id is the signed-in
// user's, injected by the program.
type openaiInvoiceArgs struct {
	Invoice string `json:"invoice"`
	UserID  string `json:"user_id" toolguard:"inject"`
}

// An approved call runs as the user it was approved for, on whichever
// process resumes it: the interrupt carries neither the injected value nor
// the one the model forged; process B resuming from a context that names
// another user is refused (ErrDecisionRefused, nothing runs, the interrupt
// still usable), and from the same user's runs it as that user.
func TestOpenAIChatApprovalRunsAsTheApprovedUser(t *testing.T) {
	t.Parallel()
	rs := openaiRedisServer(t)
	srv := fp.New(
		fp.Reply(fp.Call("pay_invoice", `{"invoice": "INV-7", "user_id": "u-attacker"}`)),
		fp.Reply(fp.Text("Invoice INV-7 is paid.")),
	)
	defer srv.Close()
	world := &openaiLedger{}
	start := func(name string) (*chatProgram, *openaiEventLog) {
		events := &openaiEventLog{}
		pay := toolstage.NewTool("pay_invoice", "Pay one of the signed-in user's invoices.",
			func(_ context.Context, a openaiInvoiceArgs) (string, error) {
				world.add("%s pay_invoice %s %s", name, a.Invoice, a.UserID)
				return "paid " + a.Invoice, nil
			})
		stage := toolstage.New([]toolstage.Tool{pay},
			toolstage.Inject("user_id", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) {
				u, ok := ctx.Value(openaiUserKey{}).(string)
				if !ok {
					return nil, errors.New("no signed-in user")
				}
				return u, nil
			}),
			toolstage.WithApprovalFor("pay_invoice"),
			toolstage.WithInterruptKey([]byte(openaiInterruptKey)),
			toolstage.WithCheckpointer(redisstore.NewCheckpointer(openaiRedisClient(t, rs.Addr()))),
			toolstage.WithEventHandler(events.handle))
		return newChatProgram(t, name, srv, stage, false, "Pay invoice INV-7."), events
	}
	as := func(user string) context.Context {
		return context.WithValue(context.Background(), openaiUserKey{}, user)
	}

	a, aEvents := start("process A")
	_, in, err := a.run(a.stage.Scope(as("u-alice")))
	if err != nil || in == nil {
		t.Fatalf("process A: run: %v, interrupt %v; want a pause", err, in)
	}
	a.stage.Attach(in, a.transcript())
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("process A: paused: %s %s(%s)", in.Pending[0].ID, in.Pending[0].Tool, in.Pending[0].Args)
	for _, s := range []string{"u-alice", "u-attacker", "user_id"} {
		if strings.Contains(string(data), s) {
			t.Errorf("the interrupt holds %q:\n%s", s, data)
		}
	}
	if n := len(aEvents.of(guard.EventForgedArgument)); n != 1 {
		t.Errorf("process A: %d forged_argument events, want 1", n)
	}

	b, _ := start("process B")
	received := func() *toolstage.Interrupt {
		var in toolstage.Interrupt
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatal(err)
		}
		return &in
	}
	other := received()
	if _, err := b.stage.Resume(b.stage.Scope(as("u-mallory")), other, openaiAcceptAll(other)...); !errors.Is(err, toolstage.ErrDecisionRefused) {
		t.Fatalf("process B as u-mallory: %v, want ErrDecisionRefused", err)
	} else {
		t.Logf("process B as u-mallory: refused: %v", err)
	}
	if got := world.list(); len(got) != 0 {
		t.Fatalf("tool runs %q after a refused resume", got)
	}
	ctxB := b.stage.Scope(as("u-alice"))
	genuine := received()
	batch, err := b.stage.Resume(ctxB, genuine, openaiAcceptAll(genuine)...)
	if err != nil {
		t.Fatalf("process B as u-alice: %v", err)
	}
	b.restore(genuine.Host)
	b.appendResults(batch.Outcomes)
	if answer, _, err := b.run(ctxB); err != nil || answer != "Invoice INV-7 is paid." {
		t.Errorf("process B: answer %q, %v", answer, err)
	}
	if got, want := world.list(), []string{"process B pay_invoice INV-7 u-alice"}; !slices.Equal(got, want) {
		t.Errorf("tool runs %q, want %q", got, want)
	}
	openaiLogRequests(t, srv)
	for _, s := range []string{"u-alice", "u-attacker", "u-mallory", "user_id"} {
		if got := openaiRequestsHolding(srv, s); got != nil {
			t.Errorf("%q reached the provider in requests %v", s, got)
		}
	}
}

// A forged user_id in arguments from which no key can be dropped —
// truncated JSON, Python literals, data after the object, an array, a
// string — is never shown to the provider again: httpguard re-asks the
// call, and its replay of the rejected turn withholds the arguments (as
// {}) rather than echo the forged value. The corrected call runs as the
// signed-in user.
func TestOpenAIChatForgedInBrokenArgumentsNeverReplayed(t *testing.T) {
	t.Parallel()
	for _, mode := range openaiModes() {
		for _, bad := range []string{
			`{"status": "open", "user_id": "u-attacker"`,
			`{'status': 'open', 'user_id': 'u-attacker'}`,
			`{"status": "open"} {"user_id": "u-attacker"}`,
			`[{"status": "open", "user_id": "u-attacker"}]`,
			`"status=open, user_id=u-attacker"`,
			`{"status": "open", "\u0075ser_id": "u-attacker",`,
		} {
			t.Run(mode.name+" "+bad, func(t *testing.T) {
				t.Parallel()
				srv := fp.New(
					fp.Reply(fp.Call("list_orders", bad)),
					fp.Reply(fp.Call("list_orders", `{"status": "open"}`)),
					fp.Reply(fp.Text("You have 2 open orders.")),
				)
				defer srv.Close()
				world := &openaiLedger{}
				orders := toolstage.NewTool("list_orders", "The signed-in user's orders with a status.",
					func(_ context.Context, a openaiOrdersArgs) (string, error) {
						world.add("list_orders %s %s", a.UserID, a.Status)
						return "2 open orders: #1001, #1002", nil
					})
				stage := toolstage.New([]toolstage.Tool{orders},
					toolstage.Inject("user_id", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) {
						return ctx.Value(openaiUserKey{}), nil
					}))
				p := newChatProgram(t, "program", srv, stage, mode.stream, "My open orders?")

				ctx := context.WithValue(context.Background(), openaiUserKey{}, "u-alice")
				if _, _, err := p.run(stage.Scope(ctx)); err != nil {
					t.Fatal(err)
				}
				if n := len(srv.Requests()); n != 3 {
					t.Fatalf("the provider got %d requests, want 3 (the bad call re-asked)", n)
				}
				for _, s := range []string{"u-attacker", "u-alice"} {
					if got := openaiRequestsHolding(srv, s); got != nil {
						openaiLogRequests(t, srv)
						t.Errorf("%q reached the provider in requests %v", s, got)
					}
				}
				if got := world.list(); !slices.Equal(got, []string{"list_orders u-alice open"}) {
					t.Errorf("tool runs %q, want the corrected call's, as u-alice", got)
				}
			})
		}
	}
}
