package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// guardedDir holds the exchanges recorded through httpguard.New with each
// real SDK: what the loopback provider received for one bad-then-good call,
// and what the SDK's accessor read. Rewritten with -record.
const guardedDir = "../../testdata/httpguard"

// daysSchema is the tool schema of the guarded exchanges: city a string,
// days an integer.
const daysSchema = `{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}`

func daysParams() map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(daysSchema), &m); err != nil {
		panic(err)
	}
	return m
}

// badThenGood is the script of every guarded exchange: a call whose city
// is a number, then a call whose days is a numeric string, which the guard
// coerces and writes back without another re-ask.
func badThenGood() []fp.Step {
	return []fp.Step{
		fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": 42}`)).WithUsage(20, 12),
		fp.Reply(fp.Text("Sorry."), fp.Call("get_weather", `{"city": "Paris", "days": "3"}`)).WithUsage(40, 9),
	}
}

// correctedArgs is what every accessor must read: the corrected call, coerced.
const correctedArgs = `{"city":"Paris","days":3}`

// guardedClient is an *http.Client whose transport is httpguard's:
// argument validation (events kept) over the default transport.
func guardedClient(events *[]guard.Event) *http.Client {
	return &http.Client{Transport: httpguard.New(nil,
		httpguard.ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) { *events = append(*events, e) })))}
}

// transcript is one recorded guarded exchange.
type transcript struct {
	title string
	reads []string // "accessor = value", in order
}

func (tr *transcript) read(accessor string, value any) {
	tr.reads = append(tr.reads, fmt.Sprintf("%s = %v", accessor, value))
}

// check compares the exchange with its recording (or rewrites it with
// -record): the requests srv received, in full, and what the accessors
// read.
func (tr *transcript) check(t *testing.T, name string, srv *fp.Server) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", tr.title)
	for i, r := range srv.Requests() {
		q := ""
		if r.RawQuery != "" {
			q = "?" + r.RawQuery
		}
		fmt.Fprintf(&b, "\n## request %d the provider received: %s %s%s\n%s\n", i+1, r.Method, r.Path, q, r.Body)
	}
	fmt.Fprintf(&b, "\n## what the SDK's accessors read\n")
	for _, r := range tr.reads {
		fmt.Fprintf(&b, "%s\n", r)
	}
	path := filepath.Join(guardedDir, name+".txt")
	if *record {
		if err := os.MkdirAll(guardedDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -record)", err)
	}
	if b.String() != string(want) {
		t.Errorf("%s differs from the recording (run go test -record if the change is meant):\n%s", path, b.String())
	}
}

// checkReask checks the provider's two requests: the second replays the
// rejected call with its violation.
func checkReask(t *testing.T, srv *fp.Server, events []guard.Event) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2", len(reqs))
	}
	if !strings.Contains(string(reqs[1].Body), `/city: expected string, got 42`) {
		t.Errorf("the re-ask does not carry the violation:\n%s", reqs[1].Body)
	}
	kinds := map[guard.EventKind]bool{}
	for _, e := range events {
		kinds[e.Kind] = true
	}
	if !kinds[guard.EventInvalid] || !kinds[guard.EventReask] || !kinds[guard.EventRepaired] {
		t.Errorf("events %v, want invalid, reask, repaired", events)
	}
}
