// Command openai-approval shows the tool stage (package toolstage) under a
// Chat Completions loop of the program's own, written with the official
// OpenAI Go SDK (openai-go) and guarded at the wire by httpguard, with a
// transfer that waits for a person across two runs of the program:
//
//	cd examples/openai-approval
//	go run .            # the model asks to transfer; the run pauses and exits
//	go run . -approve   # another process: a person's yes, the transfer, the answer
//	go run . -approve   # the same interrupt again: refused, nothing runs
//
// The model checks the balance and asks for a transfer in one turn; its
// first transfer call gives the amount as a string, which httpguard
// coerces, and lacks the payee, so httpguard re-asks the turn inside the
// SDK's call and the program reads the corrected one. get_balance runs;
// transfer_money needs approval (toolstage.WithApprovalFor), so the first
// run writes the signed interrupt, with the conversation attached to it
// (Stage.Attach), to a file in os.TempDir() (or -dir) and exits. The second run, a new process with
// a new Stage and the same key, resumes it with Accept, sends the model
// every call's tool message and prints its answer. Both tools take the
// signed-in user's id, user_id, from the program (toolstage.Inject): the
// model is never offered it, as the tools the provider received show.
//
// The interrupt's state is kept in a FileCheckpointer (filestore.go), which
// every run of the program shares, and a resume claims it there before
// anything runs: a replayed interrupt is refused, in any process.
//
// It runs offline, always: the "provider" is httpguard/fakeprovider on a
// loopback port, scripted per run. Nothing but the *http.Client given to
// the SDK differs from a program that calls OpenAI.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"github.com/toolguard/toolguard/toolstage"
)

// The tools' arguments. user_id is supplied by the program (Inject): the
// model neither sees nor sets it.
type (
	// TransferArgs are transfer_money's arguments.
	TransferArgs struct {
		To     string `json:"to" jsonschema:"the payee"`
		Amount int    `json:"amount" jsonschema:"in euros"`
		UserID string `json:"user_id" toolguard:"inject"`
	}
	// BalanceArgs are get_balance's arguments.
	BalanceArgs struct {
		UserID string `json:"user_id" toolguard:"inject"`
	}
)

// userKey is the context key of the signed-in user's id.
type userKey struct{}

// interruptKey signs interrupts; every process that resumes them needs it.
// A real program loads it from its secret store.
const interruptKey = "openai-approval example key, not a secret"

const question = "Check my balance, then send Bob 120 EUR."

func main() {
	approve := flag.Bool("approve", false, "resume the paused run: a person accepts the transfer")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "toolguard-openai-approval"), "where the paused run and the checkpoints are kept")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("openai-approval: ")
	if err := run(context.Background(), os.Stdout, *dir, *approve); err != nil {
		log.Fatal(err)
	}
}

// script is what the provider answers in each run: in the first, a turn
// whose transfer lacks the payee, then the corrected turn; in the second,
// the answer to the tool results.
func script(approve bool) []fp.Step {
	if approve {
		return []fp.Step{fp.Reply(fp.Text("Done: 120 EUR went to Bob, and your balance was 1000 EUR before it."))}
	}
	return []fp.Step{
		fp.Reply(fp.Call("get_balance", `{}`), fp.Call("transfer_money", `{"amount": "120"}`)),
		fp.Reply(fp.Call("get_balance", `{}`), fp.Call("transfer_money", `{"to": "Bob", "amount": 120}`)),
	}
}

func run(ctx context.Context, out io.Writer, dir string, approve bool) error {
	provider := fp.New(script(approve)...)
	defer provider.Close()
	ctx = context.WithValue(ctx, userKey{}, "u_42") // the signed-in user

	stage := toolstage.New([]toolstage.Tool{transferMoney(out), getBalance(out)},
		toolstage.Inject("user_id", func(ctx context.Context, _ *toolstage.ToolCall) (any, error) {
			return ctx.Value(userKey{}), nil
		}),
		toolstage.WithApprovalFor("transfer_money"),
		toolstage.WithInterruptKey([]byte(interruptKey)),
		toolstage.WithCheckpointer(&FileCheckpointer{Dir: filepath.Join(dir, "checkpoints")}),
		toolstage.WithEventHandler(func(_ context.Context, e guard.Event) { printEvent(out, e) }))
	ctx = stage.Scope(ctx) // httpguard validates against the stage's schemas
	guarded := &http.Client{Transport: httpguard.New(nil, httpguard.ToolArgValidation(), httpguard.ModelRetry())}
	client := openai.NewClient(option.WithHTTPClient(guarded), option.WithMaxRetries(0),
		option.WithBaseURL(provider.URL+"/v1/"), option.WithAPIKey("sk-offline"))
	params := openai.ChatCompletionNewParams{Model: "gpt-4o", Tools: offer(stage.Definitions())}
	paused := filepath.Join(dir, "paused.json")

	batch := &toolstage.Batch{} // the outcomes to send the model: none before its first call
	var err error
	if approve {
		if batch, params.Messages, err = resume(ctx, out, stage, paused); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, "user:", question)
		params.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)}
	}
	for {
		if batch.Interrupt != nil {
			// No tool message yet: Resume gives every call's outcome, those
			// of the calls that ran before the pause included.
			return pause(out, stage, batch.Interrupt, params.Messages, paused, provider.Requests())
		}
		for _, o := range batch.Outcomes {
			fmt.Fprintf(out, "tool message for %s %s: %s\n", o.Call.ID, o.Call.Name, o.Content)
			params.Messages = append(params.Messages, openai.ToolMessage(o.Content, o.Call.ID))
		}
		cc, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			return err
		}
		msg := cc.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Fprintln(out, "assistant:", msg.Content)
			return nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var calls []guard.Call
		for _, tc := range msg.ToolCalls {
			fmt.Fprintf(out, "model: %s %s(%s)\n", tc.ID, tc.Function.Name, tc.Function.Arguments)
			calls = append(calls, guard.Call{ID: tc.ID, Name: tc.Function.Name, Args: []byte(tc.Function.Arguments)})
		}
		if batch, err = stage.Run(ctx, calls); err != nil {
			return err
		}
	}
}

// pause keeps the interrupt, the conversation attached to it and signed
// with it, in path, and says what awaits a decision.
func pause(out io.Writer, stage *toolstage.Stage, in *toolstage.Interrupt, msgs []openai.ChatCompletionMessageParamUnion, path string, reqs []fp.Request) error {
	conversation, err := json.Marshal(msgs)
	if err != nil {
		return err
	}
	stage.Attach(in, conversation)
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	for _, p := range in.Pending {
		fmt.Fprintf(out, "awaiting a decision: %s %s(%s)\n", p.ID, p.Tool, p.Args)
	}
	fmt.Fprintf(out, "the signed interrupt and the conversation are in %s\nrun with -approve to accept\n", path)
	fmt.Fprintf(out, "\nthe tools the provider received (no user_id):\n%s", tools(reqs[0].Body))
	return nil
}

// resume reads the paused run in path, accepts every pending call and
// resumes it: the batch has every call's outcome, and the conversation
// comes back from the interrupt once its signature verified.
func resume(ctx context.Context, out io.Writer, stage *toolstage.Stage, path string) (*toolstage.Batch, []openai.ChatCompletionMessageParamUnion, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("no paused run in %s: run without -approve first", path)
	}
	if err != nil {
		return nil, nil, err
	}
	var in toolstage.Interrupt
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var decisions []toolstage.Decision
	for _, p := range in.Pending {
		fmt.Fprintf(out, "a person accepts %s %s(%s)\n", p.ID, p.Tool, p.Args)
		decisions = append(decisions, toolstage.Decision{CallID: p.ID, Action: toolstage.Accept, Digest: p.Digest})
	}
	batch, err := stage.Resume(ctx, &in, decisions...)
	if err != nil {
		return nil, nil, err
	}
	var msgs []openai.ChatCompletionMessageParamUnion
	if err := json.Unmarshal(in.Host, &msgs); err != nil {
		return nil, nil, fmt.Errorf("%s: the conversation: %w", path, err)
	}
	return batch, msgs, nil
}

// transferMoney is the tool that needs a person's yes.
func transferMoney(out io.Writer) toolstage.Tool {
	return toolstage.NewTool("transfer_money", "Sends money from the user's account.",
		func(_ context.Context, a TransferArgs) (string, error) {
			fmt.Fprintf(out, "  tool transfer_money runs: %d EUR from %s to %s\n", a.Amount, a.UserID, a.To)
			return fmt.Sprintf("sent %d EUR to %s", a.Amount, a.To), nil
		})
}

// getBalance is the tool that runs at once.
func getBalance(out io.Writer) toolstage.Tool {
	return toolstage.NewTool("get_balance", "The user's balance.",
		func(_ context.Context, a BalanceArgs) (string, error) {
			fmt.Fprintf(out, "  tool get_balance runs for %s\n", a.UserID)
			return "1000 EUR", nil
		})
}

// printEvent prints an event of either stage.
func printEvent(out io.Writer, e guard.Event) {
	line := "  [toolguard] " + string(e.Kind)
	if e.Kind == guard.EventInvalid {
		line += ": " + e.Err.Error()
	} else if e.Tool != "" {
		line += " " + e.Tool
	}
	if len(e.Paths) > 0 {
		line += " " + strings.Join(e.Paths, ", ")
	}
	fmt.Fprintln(out, line)
}

// offer returns the stage's tools as openai-go takes them.
func offer(defs []toolstage.Definition) []openai.ChatCompletionToolUnionParam {
	var tools []openai.ChatCompletionToolUnionParam
	for _, d := range defs {
		var params shared.FunctionParameters
		_ = json.Unmarshal(d.Parameters, &params) // a JSON object, always
		tools = append(tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: d.Name, Description: openai.String(d.Description), Parameters: params}))
	}
	return tools
}

// tools returns, one per line, the name and parameters of each tool in a
// Chat Completions request body.
func tools(body []byte) string {
	var req struct {
		Tools []struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	var s string
	for _, t := range req.Tools {
		s += fmt.Sprintf("  %s %s\n", t.Function.Name, t.Function.Parameters)
	}
	return s
}
