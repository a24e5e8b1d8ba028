// Command mcp shows toolguard in front of a real MCP server's tools: the
// agent offers the model the server's tools with their own inputSchema, the
// model makes a typical mistake (a number sent as a string, a required
// argument left out), toolguard answers it with feedback before anything
// reaches the server, and the corrected call runs on the server.
//
// It runs on a scripted fake model, whatever the environment holds; -openai
// runs it on OpenAI instead (it needs OPENAI_API_KEY; OPENAI_MODEL picks the
// model). The server is the MCP
// reference server @modelcontextprotocol/server-everything, started with
// npx when npx is on PATH (the first run downloads it), else an in-process
// go-sdk server with the same get-sum tool and schema.
//
//	go run ./examples/mcp                    # npx if available
//	go run ./examples/mcp -server=inprocess  # never leaves the process
//	go run ./examples/mcp -openai            # on OpenAI
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/toolstage/mcptool"
)

// everything is the reference server, pinned.
const everything = "@modelcontextprotocol/server-everything@2026.8.31"

func main() {
	server := flag.String("server", "auto", `"npx" (server-everything), "inprocess" (go-sdk), or "auto": npx if it is on PATH`)
	useOpenAI := flag.Bool("openai", false, "run on OpenAI (needs OPENAI_API_KEY) instead of the scripted fake model")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	model, err := chooseModel(os.Stdout, *useOpenAI)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(ctx, os.Stdout, *server, model); err != nil {
		log.Fatal(err)
	}
}

// chooseModel returns OpenAI when asked with -openai, else the scripted fake
// model, whatever the environment holds, and says which it chose.
func chooseModel(out io.Writer, useOpenAI bool) (llms.Model, error) {
	if !useOpenAI {
		fmt.Fprintln(out, "Running offline on a scripted fake model (-openai runs on OpenAI).")
		return scriptedModel(), nil
	}
	if os.Getenv("OPENAI_API_KEY") == "" {
		return nil, errors.New("-openai needs OPENAI_API_KEY")
	}
	fmt.Fprintln(out, "Running on OpenAI (OPENAI_MODEL picks the model).")
	return openai.New()
}

// scriptedModel makes a typical bad call, then the corrected call, then
// answers.
func scriptedModel() *fakemodel.Model {
	return fakemodel.New(
		fakemodel.ToolCalls(fakemodel.Call("get-sum", `{"a": "17"}`)),
		fakemodel.ToolCalls(fakemodel.Call("get-sum", `{"a": 17, "b": 25}`)),
		fakemodel.Text("17 + 25 = 42."),
	)
}

func run(ctx context.Context, out io.Writer, server string, model llms.Model) error {
	var sent atomic.Int32 // tools/call requests that left the client
	client := mcp.NewClient(&mcp.Implementation{Name: "toolguard-example", Version: "v1"}, nil)
	client.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				sent.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	session, stop, err := connect(ctx, out, client, server)
	if err != nil {
		return err
	}
	defer stop()

	// Offer the model two of the server's tools. server-everything has more,
	// some of which (get-env) no model should see.
	mcpTools, err := mcptool.Tools(ctx, session, mcptool.WithFilter(func(t *mcp.Tool) bool {
		return t.Name == "echo" || t.Name == "get-sum"
	}))
	if err != nil {
		return err
	}
	var names []string
	var getSum toolstage.Tool
	tools := make([]toolstage.Tool, len(mcpTools))
	for i, t := range mcpTools {
		names = append(names, t.Name())
		if t.Name() == "get-sum" {
			getSum = t
		}
		tools[i] = logged{t, out}
	}
	if getSum == nil {
		return fmt.Errorf("mcp example: the server has no get-sum tool")
	}
	slices.Sort(names)
	fmt.Fprintf(out, "tools: %s\n", strings.Join(names, ", "))
	schema, _ := json.Marshal(getSum.Schema())
	fmt.Fprintf(out, "get-sum inputSchema (from the server): %s\n\n", schema)

	a := agent.New(model, toolstage.New(tools), agent.WithSystemPrompt("You do arithmetic with the tools you are given."), agent.WithMiddleware(
		middleware.ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) {
			if e.Kind == guard.EventInvalid {
				fmt.Fprintf(out, "  toolguard: %s has invalid arguments; nothing is sent to the MCP server\n", e.CallID)
				printFeedback(out, e)
			}
		})),
		trace(out), // innermost: sees every raw model call
	))
	const question = "What is 17 + 25? Use the get-sum tool."
	fmt.Fprintln(out, "user:", question)
	res, err := a.Run(ctx, question)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "assistant: %s\n\n", res.Output)
	fmt.Fprintf(out, "%d model calls; %d tools/call sent to the MCP server, with valid arguments.\n", res.ModelCalls, sent.Load())
	return nil
}

// logged prints each call of an MCP tool and what the server answered.
type logged struct {
	toolstage.Tool
	out io.Writer
}

func (l logged) Call(ctx context.Context, args string) (string, error) {
	result, err := l.Tool.Call(ctx, args)
	if err != nil {
		fmt.Fprintf(l.out, "MCP server runs %s(%s) -> error: %v\n", l.Name(), args, err)
	} else {
		fmt.Fprintf(l.out, "MCP server runs %s(%s) -> %s\n", l.Name(), args, result)
	}
	return result, err
}

// connect starts the server the flag names and connects client to it. stop
// closes the session and stops the server.
func connect(ctx context.Context, out io.Writer, client *mcp.Client, server string) (*mcp.ClientSession, func(), error) {
	if server == "auto" {
		if _, err := exec.LookPath("npx"); err == nil {
			session, stop, err := connect(ctx, out, client, "npx")
			if err == nil {
				return session, stop, nil
			}
			// No access to the npm registry, say: the example still runs.
			fmt.Fprintf(out, "could not start it (%v); falling back to the in-process server\n", err)
		}
		server = "inprocess"
	}
	switch server {
	case "npx":
		fmt.Fprintf(out, "MCP server: %s, started with npx over stdio\n", everything)
		cmd := exec.Command("npx", "-y", everything)
		cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
		setProcessGroup(cmd)
		session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			sweep(cmd)
			return nil, nil, fmt.Errorf("mcp example: starting %s: %w", everything, err)
		}
		// server-everything does not exit when its stdin closes, and npx
		// runs it as a grandchild: stop the whole process group.
		return session, func() { terminate(cmd); session.Close(); sweep(cmd) }, nil
	case "inprocess":
		fmt.Fprintln(out, "MCP server: in-process go-sdk server (get-sum and echo, as in server-everything)")
		st, ct := mcp.NewInMemoryTransports()
		ss, err := inProcessServer().Connect(ctx, st, nil)
		if err != nil {
			return nil, nil, err
		}
		session, err := client.Connect(ctx, ct, nil)
		if err != nil {
			ss.Close()
			return nil, nil, err
		}
		return session, func() { session.Close(); ss.Wait() }, nil
	}
	return nil, nil, fmt.Errorf("mcp example: -server=%q: want auto, npx or inprocess", server)
}

// inProcessServer has server-everything's get-sum and echo tools, with the
// same inputSchemas and results.
func inProcessServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "example-server", Version: "v1"}, nil)
	s.AddTool(&mcp.Tool{
		Name:        "get-sum",
		Description: "Returns the sum of two numbers",
		InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",` +
			`"properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}},` +
			`"required":["a","b"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ A, B float64 }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return errorResult(err.Error()), nil
		}
		return textResult(fmt.Sprintf("The sum of %s and %s is %s.", num(in.A), num(in.B), num(in.A+in.B))), nil
	})
	s.AddTool(&mcp.Tool{
		Name:        "echo",
		Description: "Echoes back the input string",
		InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",` +
			`"properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"]}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Message string }
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return errorResult(err.Error()), nil
		}
		return textResult("Echo: " + in.Message), nil
	})
	return s
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func errorResult(s string) *mcp.CallToolResult {
	r := textResult(s)
	r.IsError = true
	return r
}

// trace is a middleware that prints the model's raw answers.
func trace(out io.Writer) middleware.Middleware {
	return middleware.Func(func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, req *middleware.Request) (*llms.ContentResponse, error) {
			resp, err := next(ctx, req)
			if err != nil {
				return nil, err
			}
			for _, ch := range resp.Choices {
				for _, tc := range ch.ToolCalls {
					fmt.Fprintf(out, "model: %s(%s)\n", tc.FunctionCall.Name, tc.FunctionCall.Arguments)
				}
				if ch.Content != "" {
					fmt.Fprintf(out, "model: %q\n", ch.Content)
				}
			}
			return resp, nil
		}
	})
}

// printFeedback prints the tool message a re-ask sends the model about an
// invalid call.
func printFeedback(out io.Writer, e guard.Event) {
	fmt.Fprintf(out, "  toolguard -> model, tool message for %s:\n", e.CallID)
	for _, line := range strings.Split(e.Feedback, "\n") {
		fmt.Fprintf(out, "    | %s\n", line)
	}
}
