package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolguard/toolguard/toolstage"
)

// Tools lists every tool of the session, following pagination, and adapts
// each with [New] (keeping only those [WithFilter] accepts). The tools are in the
// server's order. A listing error, or a server that lists the same name
// twice (which providers reject and which a looping cursor would cause), or
// two tools whose names map to one name for the model ([WithToolNames]), is
// returned as an error and no tools.
//
// Tools lists once: tools the server adds later are not seen until Tools is
// called again.
func Tools(ctx context.Context, s *mcp.ClientSession, opts ...Option) ([]toolstage.Tool, error) {
	if s == nil {
		return nil, errors.New("mcptool: Tools: nil session")
	}
	cfg := newConfig(opts)
	var tools []toolstage.Tool
	seen := make(map[string]bool)
	sent := make(map[string]string) // name sent to the model -> server's name
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcptool: list tools: %w", err)
		}
		if cfg.keep != nil && !cfg.keep(t) {
			continue
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("mcptool: the server lists tool %q twice", t.Name)
		}
		seen[t.Name] = true
		tool := newTool(s, t, cfg)
		if tool.name == "" {
			return nil, fmt.Errorf("mcptool: WithToolNames maps tool %q to an empty name", t.Name)
		}
		if other, dup := sent[tool.name]; dup {
			return nil, fmt.Errorf("mcptool: tools %q and %q are both named %q for the model; choose names with WithToolNames", other, t.Name, tool.name)
		}
		sent[tool.name] = t.Name
		tools = append(tools, tool)
	}
	return tools, nil
}

// New adapts t, a tool listed by the session's server, to [toolstage.Tool].
// Calls go to s. t is read once, here; it must not be nil. [WithFilter] does
// not apply.
func New(s *mcp.ClientSession, t *mcp.Tool, opts ...Option) *Tool {
	if s == nil || t == nil {
		panic("mcptool: New needs a session and a tool")
	}
	tool := newTool(s, t, newConfig(opts))
	if tool.name == "" {
		panic(fmt.Sprintf("mcptool: New: WithToolNames maps tool %q to an empty name", t.Name))
	}
	return tool
}

// Tool is an MCP server's tool as an [toolstage.Tool]. It is immutable and safe for
// concurrent use.
type Tool struct {
	session     *mcp.ClientSession
	def         *mcp.Tool
	name        string // sent to the model
	server      string // the server's name, used in tools/call
	description string
	schema      any
	maxResult   int
}

var _ toolstage.Tool = (*Tool)(nil)

func newTool(s *mcp.ClientSession, t *mcp.Tool, cfg config) *Tool {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	return &Tool{
		session:     s,
		def:         t,
		name:        cfg.sentName(t.Name),
		server:      t.Name,
		description: desc,
		schema:      inputSchema(t.InputSchema),
		maxResult:   cfg.maxResultBytes,
	}
}

// Name returns the name the model sees and calls: the server's name when
// providers accept it (toolstage.IsSafeToolName), else toolstage.SafeToolName of it
// ("files.read" becomes "files_read_" and 8 hex digits), or what
// [WithToolNames] makes of it. [Tool.Call] calls the server's tool by the
// server's name, MCP().Name.
func (t *Tool) Name() string { return t.name }

// Description returns the server's description of the tool, or its title
// when the server gives no description.
func (t *Tool) Description() string { return t.description }

// Schema returns the server's inputSchema as a map[string]any (the form
// every langchaingo provider accepts, Google's included), copied when the
// tool was adapted, so it never changes and ToolArgValidation compiles it
// once. A server that sent no inputSchema gets {"type": "object",
// "properties": {}}. An inputSchema that is not a JSON object is returned
// unchanged as a json.RawMessage for ToolArgValidation to judge: true and
// false are JSON Schemas, anything else is reported as a schema error.
func (t *Tool) Schema() any { return t.schema }

// MCP returns the tool as the server listed it, with its annotations and
// output schema. It is shared; do not modify it.
func (t *Tool) MCP() *mcp.Tool { return t.def }

// Call calls the tool on the server with args, a JSON object (empty means
// {}), sent exactly as given. It returns the result's content as text (see
// the package documentation), bounded by [WithMaxResultBytes]. A result the
// server marks as an error is returned as a *[ToolError]; arguments that are
// not a JSON object, a protocol error or a broken connection as an error
// prefixed "mcptool: ".
func (t *Tool) Call(ctx context.Context, args string) (string, error) {
	raw, err := objectArgs(args)
	if err != nil {
		return "", fmt.Errorf("mcptool: tool %q: %w", t.name, err)
	}
	res, err := t.session.CallTool(ctx, &mcp.CallToolParams{Name: t.server, Arguments: raw})
	if err != nil {
		return "", fmt.Errorf("mcptool: tool %q: %w", t.name, err)
	}
	if res.NeedsInput() {
		return "", fmt.Errorf("mcptool: tool %q: the server asks for client input, which mcptool cannot give", t.name)
	}
	text := bound(resultText(res), t.maxResult)
	if res.IsError {
		return "", &ToolError{Tool: t.name, Text: text, Result: res}
	}
	return text, nil
}

// ToolError is returned by (*[Tool]).Call when the server answers with a
// result marked as an error (CallToolResult.IsError): the tool ran and
// failed, for example on an argument it could not use. Its Error text is the
// server's message unchanged — not prefixed, because it is what the agent
// shows the model so that it can correct the call.
type ToolError struct {
	Tool   string              // the tool's name
	Text   string              // the result's content as text, bounded like a result
	Result *mcp.CallToolResult // the server's whole answer
}

// Error returns the server's error text, or a note naming the tool when the
// server sent none.
func (e *ToolError) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("mcptool: tool %q reported an error without a message", e.Tool)
	}
	return e.Text
}

// inputSchema copies the server's inputSchema into a value that is the
// tool's alone: the client decodes it as map[string]any, which a caller
// holding the *mcp.Tool could modify.
func inputSchema(s any) any {
	if s == nil {
		return emptyObjectSchema()
	}
	raw, err := json.Marshal(s)
	if err != nil {
		// Not reachable for a schema the client decoded; hand it on as is
		// and let validation report it.
		return s
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return json.RawMessage(raw)
	}
	if m == nil { // JSON null
		return emptyObjectSchema()
	}
	return m
}

func emptyObjectSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}}
}

// objectArgs checks that args is a JSON object, "" meaning {}.
func objectArgs(args string) (json.RawMessage, error) {
	b := bytes.TrimSpace([]byte(args))
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if b[0] != '{' {
		return nil, errors.New("arguments are not a JSON object")
	}
	return json.RawMessage(b), nil
}
