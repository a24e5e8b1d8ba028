package errfmt

import (
	"slices"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/safetext"
)

// UnknownTool is the tool message for a call naming a tool that does not
// exist (ToolArgValidation with UnknownReject): it lists the available tools
// and suggests the closest name.
func UnknownTool(name string, available []string) string {
	tools := slices.Clone(available)
	slices.Sort(tools)
	tools = slices.Compact(tools)
	var b strings.Builder
	b.WriteString("Tool ")
	b.WriteString(safetext.Quote(name, 64))
	b.WriteString(" does not exist.")
	if len(tools) == 0 {
		b.WriteString(" No tools are available; answer without calling a tool.")
		return b.String()
	}
	b.WriteString(" Available tools: ")
	for i, t := range tools {
		if i == 50 {
			b.WriteString(", and " + strconv.Itoa(len(tools)-i) + " more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(safetext.Quote(t, 64))
	}
	b.WriteString(".")
	if c := Closest(name, tools); c != "" {
		b.WriteString(" Did you mean ")
		b.WriteString(safetext.Quote(c, 64))
		b.WriteString("?")
	}
	b.WriteString(" Call one of the available tools by its exact name.")
	return b.String()
}

// Closest returns the name in names nearest to name by edit distance,
// ignoring case; ties go to the alphabetically first. It returns "" when
// names is empty.
func Closest(name string, names []string) string {
	best, bestD := "", -1
	lower := strings.ToLower(truncate(name, 256))
	for _, n := range names {
		d := levenshtein(lower, strings.ToLower(truncate(n, 256)))
		if bestD < 0 || d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	return best
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
