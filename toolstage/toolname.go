package toolstage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard/validation"
)

// MaxToolNameLen is the longest tool name OpenAI accepts, and so the longest
// [SafeToolName] returns.
const MaxToolNameLen = 64

// IsSafeToolName reports whether name is accepted as a function name by every
// provider langchaingo speaks to: 1 to 64 characters from a-z, A-Z, 0-9, "_"
// and "-" (OpenAI's rule, ^[a-zA-Z0-9_-]{1,64}$; Anthropic's is the same,
// Gemini's is no wider).
func IsSafeToolName(name string) bool {
	if name == "" || len(name) > MaxToolNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !safeNameByte(name[i]) {
			return false
		}
	}
	return true
}

func safeNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// SafeToolName returns the name to send the model for a tool named name: name
// itself when [IsSafeToolName] accepts it, else name with each other
// character replaced by "_", cut to fit, and followed by "_" and 8 hex digits
// of the SHA-256 of name ("files.read" becomes "files_read_" + 8 digits). It
// is a pure function, so the name is stable across runs and processes, and
// two different names map to different safe names unless their hashes
// collide (odds 2⁻³²); [New] and mcptool.Tools refuse the tools if they do.
func SafeToolName(name string) string {
	if IsSafeToolName(name) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		if r < 0x80 && safeNameByte(byte(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	base := b.String()
	if len(base) > MaxToolNameLen-len(suffix) {
		base = base[:MaxToolNameLen-len(suffix)]
	}
	return base + suffix
}

// Renamed returns a [Tool] that is t under another name: its Name() is name,
// everything else is t's. Use it to choose one tool's name by hand; [New]
// renames unsafe names itself ([WithToolNames]). It panics if t is nil or
// name is empty.
func Renamed(t Tool, name string) Tool {
	if t == nil || name == "" {
		panic(fmt.Sprintf("toolstage: Renamed(%v, %q): needs a tool and a name", t, name))
	}
	if t.Name() == name {
		return t
	}
	return &renamedTool{Tool: t, name: name}
}

type renamedTool struct {
	Tool
	name string
}

func (t *renamedTool) Name() string { return t.name }

func (t *renamedTool) unwrapTool() Tool { return t.Tool }

func (t *renamedTool) compiledSchema() *validation.Schema { return compiledSchema(t.Tool) }

func (t *renamedTool) callChecked(ctx context.Context, args []byte, value map[string]any) (string, error) {
	return callWrapped(ctx, t.Tool, args, value)
}

// sentName applies the configured mapping (default [SafeToolName]) to t.
func (c *config) sentName(t Tool) Tool {
	fn := c.toolName
	if fn == nil {
		fn = SafeToolName
	}
	name := fn(t.Name())
	if name == "" {
		panic(fmt.Sprintf("toolstage: New: WithToolNames maps tool %q to an empty name", t.Name()))
	}
	return Renamed(t, name)
}
