package mcptool

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resultText renders a tool result for the model: text parts as they are,
// other parts as a bracketed description, one part per line. A result with
// no content but structured content is that content as JSON.
func resultText(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		if res.StructuredContent != nil {
			if b, err := json.Marshal(res.StructuredContent); err == nil {
				return string(b)
			}
		}
		return ""
	}
	parts := make([]string, len(res.Content))
	for i, c := range res.Content {
		parts[i] = contentText(c)
	}
	return strings.Join(parts, "\n")
}

func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]", mimeType(c.MIMEType), len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]", mimeType(c.MIMEType), len(c.Data))
	case *mcp.ResourceLink:
		s := "[resource link " + c.URI
		if c.Name != "" {
			s += fmt.Sprintf(" %q", c.Name)
		}
		if c.MIMEType != "" {
			s += ", " + c.MIMEType
		}
		return s + "]"
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource]"
		}
		head := "[resource " + r.URI
		if r.MIMEType != "" {
			head += ", " + r.MIMEType
		}
		if len(r.Blob) > 0 {
			return fmt.Sprintf("%s, %d bytes]", head, len(r.Blob))
		}
		return head + "]\n" + r.Text
	case nil:
		return ""
	default:
		var wire struct{ Type string }
		if b, err := c.MarshalJSON(); err == nil && json.Unmarshal(b, &wire) == nil && wire.Type != "" {
			return "[" + wire.Type + " content]"
		}
		return "[content]"
	}
}

func mimeType(m string) string {
	if m == "" {
		return "unknown type"
	}
	return m
}

// bound cuts s to at most n bytes at a UTF-8 boundary and says so on a line
// of its own.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s\n[mcptool: result truncated: %d of %d bytes shown]", s[:cut], cut, len(s))
}
