package repair_test

import (
	"strings"
	"testing"

	"github.com/toolguard/toolguard/repair"
)

// TestRepairKeepsArgumentLimits: a repair never accepts what DecodeArgs
// refuses in plain JSON — a key twice (two plausible readings), nesting
// deeper than validation.MaxDepth, more than validation.MaxValues values,
// a number too long or too large to check — whether the text was fenced,
// Python-flavoured, or the number came from a string.
func TestRepairKeepsArgumentLimits(t *testing.T) {
	t.Parallel()
	many := strings.Repeat("1, ", 100_000)
	tests := map[string]string{
		"fenced, a key twice":            "```json\n{\"city\": \"Rome\", \"city\": \"Paris\"}\n```",
		"prose, a key twice":             `Here you go: {"city": "Rome", "city": "Paris"}`,
		"double-encoded, a key twice":    `"{\"city\": \"Rome\", \"city\": \"Paris\"}"`,
		"Python, a key twice":            `{'city': 'Rome', 'city': 'Paris'}`,
		"trailing comma, a key twice":    `{"city": "Rome", "city": "Paris",}`,
		"number string, huge exponent":   `{"city": "Paris", "days": "1e999999"}`,
		"Python, huge exponent":          `{'city': 'Paris', 'temp': 1e999999}`,
		"Python, 150 levels deep":        `{'city': 'Paris', 'ids': ` + strings.Repeat("[", 149) + strings.Repeat("]", 149) + `}`,
		"trailing comma, 100,003 values": `{"city": "Paris", "ids": [` + many + `1,],}`,
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v, reps := repair.Default().Repair([]byte(args), schema)
			if v != nil || reps != nil {
				t.Errorf("Repair(%.80s) = %v, %v; want nothing repaired", args, reps, v)
			}
		})
	}
	// The same repairs within the limits still work.
	if v, reps := repair.Default().Repair([]byte("```json\n{'city': 'Paris', 'days': '5', 'ids': [[1]],}\n```"), nil); v == nil || len(reps) == 0 {
		t.Errorf("a fenced Python call within the limits was not repaired")
	}
}
