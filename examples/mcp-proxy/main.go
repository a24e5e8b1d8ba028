// Command mcp-proxy shows mcpguard in a reverse proxy in front of an MCP
// server, offline: a go-sdk server whose tool is added raw (Server.AddTool,
// which validates nothing), an httputil.ReverseProxy whose Transport is
// mcpguard.New (what toolguard-proxy does for MCP), and a go-sdk client that
// talks to the proxy as if it were the server.
//
// The client's first call breaks the tool's inputSchema: the proxy answers
// it itself with an isError result holding toolguard's feedback, which the
// model reads to correct itself, and the server never sees it. The
// corrected call reaches the server once, cleaned: the "3" sent for an
// integer arrives as 3.
//
//	go run ./examples/mcp-proxy
//
// Everything listens on free loopback ports and stops before the program
// exits.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/mcpguard"
)

// The forecast tool's schemas, as the server lists them.
const (
	inputSchema = `{"type":"object","properties":{` +
		`"city":{"type":"string"},` +
		`"days":{"type":"integer","minimum":1,"maximum":7},` +
		`"units":{"type":"string","enum":["C","F"]}},` +
		`"required":["city","days"],"additionalProperties":false}`
	outputSchema = `{"type":"object","properties":{"city":{"type":"string"},"temps":{"type":"array","items":{"type":"number"}}},"required":["city","temps"]}`
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run starts the server and the proxy on free loopback ports, makes the
// client's two calls through the proxy, prints what each part saw to w and
// stops everything, in order, before it returns.
func run(ctx context.Context, w io.Writer) (err error) {
	out := &syncWriter{w: w} // the server, the proxy and the client print from their own goroutines

	// The MCP server: one raw tool, and a count of the requests it receives.
	var received counts
	server := newServer(out, &received)
	serverURL, stopServer, err := serve(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopServer()) }()
	fmt.Fprintln(out, "MCP server: go-sdk, one raw tool (forecast) that validates nothing itself")

	// The proxy: a ReverseProxy whose Transport is mcpguard's.
	target, err := url.Parse(serverURL)
	if err != nil {
		return err
	}
	upstream := http.DefaultTransport.(*http.Transport).Clone()
	defer upstream.CloseIdleConnections()
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: mcpguard.New(upstream, mcpguard.WithEventHandler(printEvent(out))),
	}
	proxyURL, stopProxy, err := serve(proxy)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProxy()) }()
	fmt.Fprintln(out, "proxy: httputil.ReverseProxy, Transport mcpguard.New, in front of the server")

	// The client: go-sdk, pointed at the proxy.
	clientTransport := http.DefaultTransport.(*http.Transport).Clone()
	defer clientTransport.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   proxyURL,
		HTTPClient: &http.Client{Transport: clientTransport},
	}, nil)
	if err != nil {
		return fmt.Errorf("mcp-proxy example: connecting through the proxy: %w", err)
	}
	defer func() { err = errors.Join(err, closeSession(session)) }()
	fmt.Fprintln(out, "MCP client: go-sdk, connected to the proxy")

	// The model's call: "3" for an integer (the proxy coerces it) and
	// "kelvin" for units (only the model can fix that); then the model's
	// correction, which fixes the units only.
	for _, args := range []map[string]any{
		{"city": "Paris", "days": "3", "units": "kelvin"},
		{"city": "Paris", "days": "3", "units": "C"},
	} {
		if err := call(ctx, out, session, args); err != nil {
			return err
		}
	}

	fmt.Fprintf(out, "\nthe server received %d tools/list (sent by the proxy, which learnt the schemas) and %d tools/call: the corrected call, once.\n",
		received.get("tools/list"), received.get("tools/call"))
	return nil
}

// call makes one tools/call of forecast with args and prints what the
// client sent and read.
func call(ctx context.Context, out io.Writer, session *mcp.ClientSession, args map[string]any) error {
	sent, err := json.Marshal(args)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nclient -> tools/call forecast %s\n", sent)
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "forecast", Arguments: args})
	if err != nil {
		return fmt.Errorf("mcp-proxy example: tools/call: %w", err)
	}
	fmt.Fprintf(out, "client <- isError=%v\n", res.IsError)
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			for _, line := range strings.Split(t.Text, "\n") {
				fmt.Fprintf(out, "    | %s\n", line)
			}
		}
	}
	return nil
}

// newServer returns the MCP server: forecast, added raw, so that whatever
// arrives runs; it prints the arguments it received. received counts the
// requests by method.
func newServer(out io.Writer, received *counts) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			received.add(method)
			return next(ctx, method, req)
		}
	})
	s.AddTool(&mcp.Tool{
		Name:         "forecast",
		Description:  "The daily high temperatures in a city for the next days.",
		InputSchema:  json.RawMessage(inputSchema),
		OutputSchema: json.RawMessage(outputSchema),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintf(out, "  server: forecast runs with %s\n", req.Params.Arguments)
		var in struct {
			City string `json:"city"`
			Days int    `json:"days"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			// Without the proxy, {"days": "3"} would end here.
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		temps := []float64{21.5, 23, 19.5, 18, 20, 22, 24}[:min(max(in.Days, 0), 7)]
		text, _ := json.Marshal(temps)
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s, next %d days: %s", in.City, len(temps), text)}},
			StructuredContent: map[string]any{"city": in.City, "temps": temps},
		}, nil
	})
	return s
}

// printEvent prints what the proxy's transport reports.
func printEvent(out io.Writer) func(context.Context, guard.Event) {
	return func(_ context.Context, e guard.Event) {
		switch e.Kind {
		case guard.EventRepaired:
			fmt.Fprintf(out, "  proxy: repaired %s\n", strings.Join(e.Paths, ", "))
		case guard.EventInvalid:
			fmt.Fprintf(out, "  proxy: call %s to %s has invalid arguments: answered with feedback, not forwarded\n", e.CallID, e.Tool)
		default:
			fmt.Fprintf(out, "  proxy: %s %s %s\n", e.Kind, e.Tool, strings.Join(e.Paths, ", "))
		}
	}
}

// serve serves h on a free loopback port and returns its URL, and stop,
// which shuts the server down gracefully and waits for it.
func serve(h http.Handler) (string, func() error, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(ctx)
		if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// closeSession ends the client's session (a DELETE through the proxy).
func closeSession(s *mcp.ClientSession) error {
	if err := s.Close(); err != nil {
		return fmt.Errorf("mcp-proxy example: closing the session: %w", err)
	}
	return nil
}

// counts counts requests by method; safe for concurrent use.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) add(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[method]++
}

func (c *counts) get(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method]
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
