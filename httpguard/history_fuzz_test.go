package httpguard

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzHistory feeds every protocol's history check arbitrary bodies: it
// never panics, a repaired body is JSON, and a repair of a repaired body
// finds nothing left to repair.
func FuzzHistory(f *testing.F) {
	for _, c := range historyCases {
		f.Add(c.body)
	}
	protos := []historyProtocol{chatWire{}, responsesWire{}, messagesWire{}, geminiWire{}}
	f.Fuzz(func(t *testing.T, body string) {
		for _, p := range protos {
			out, fixes, err := p.history([]byte(body))
			var he *HistoryError
			if err != nil || len(fixes) == 0 {
				if err == nil && string(out) != body {
					t.Fatalf("%T: no fix, but the body changed:\n%s\n%s", p, body, out)
				}
				continue
			}
			if !json.Valid(out) {
				t.Fatalf("%T: the repaired body is not JSON:\n%s\n%s", p, body, out)
			}
			again, more, err := p.history(out)
			if errors.As(err, &he) {
				t.Fatalf("%T: the repaired body is refused: %v\n%s\n%s", p, err, body, out)
			}
			if err == nil && len(more) != 0 {
				t.Fatalf("%T: the repaired body needs %d more repairs (%v):\n%s\n%s\n%s", p, len(more), more[0].fault, body, out, again)
			}
		}
	})
}
