package errfmt_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/errfmt"
)

func TestToolError(t *testing.T) {
	t.Parallel()
	if got := errfmt.ToolError(errors.New("no such city")); got != "Error: no such city" {
		t.Errorf("ToolError = %q", got)
	}
	long := errfmt.ToolError(errors.New(strings.Repeat("é", 3000)))
	if !strings.HasPrefix(long, errfmt.PrefixToolError) || !strings.HasSuffix(long, "…") || len(long) > errfmt.MaxToolErrorBytes+16 {
		t.Errorf("ToolError of a 6000-byte error: %d bytes, want it cut to about %d", len(long), errfmt.MaxToolErrorBytes)
	}
}
