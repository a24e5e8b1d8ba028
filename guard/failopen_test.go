package guard_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
)

// captureDefaultLog points slog.Default at a buffer for the test. Tests
// that call it must not be parallel: slog's default is process-wide.
func captureDefaultLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

// TestFailOpenIsLoggedByDefault: with no event handler, a call that is still
// invalid after the last re-ask, or whose schema does not compile, comes
// back with err == nil; the caller learns it from slog.Default at Warn.
// A handler, or WithFailClosed, takes over and nothing is logged.
func TestFailOpenIsLoggedByDefault(t *testing.T) {
	intSchema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
	invalid := func() *script {
		c := callsStep(call("count", `{"n":"x"}`))
		return newScript(c, c, c)
	}
	broken := func() *script { return newScript(callsStep(call("broken", `{"n":1}`))) }
	cases := []struct {
		name    string
		model   func() *script
		tool    guard.Tool
		opts    []guard.ValidationOption
		wantLog string // "" = nothing logged
		wantErr bool
	}{
		{name: "give up, no handler", model: invalid, tool: tool("count", intSchema),
			wantLog: `level=WARN msg="toolguard: give_up" event.kind=give_up event.middleware=ToolArgValidation event.attempt=3`},
		{name: "schema error, no handler", model: broken, tool: tool("broken", map[string]any{"type": "nonsense"}),
			wantLog: `level=WARN msg="toolguard: schema_error" event.kind=schema_error event.middleware=ToolArgValidation event.attempt=1 event.tool=broken`},
		{name: "give up, handler set", model: invalid, tool: tool("count", intSchema),
			opts: []guard.ValidationOption{guard.WithEventHandler(func(context.Context, guard.Event) {})}},
		{name: "schema error, handler set", model: broken, tool: tool("broken", map[string]any{"type": "nonsense"}),
			opts: []guard.ValidationOption{guard.WithEventHandler(func(context.Context, guard.Event) {})}},
		{name: "give up, fail closed", model: invalid, tool: tool("count", intSchema),
			opts: []guard.ValidationOption{guard.WithFailClosed()}, wantErr: true},
		{name: "schema error, fail closed", model: broken, tool: tool("broken", map[string]any{"type": "nonsense"}),
			opts: []guard.ValidationOption{guard.WithFailClosed()}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logged := captureDefaultLog(t)
			_, err := run(tc.model(), question(tc.tool), toolArgValidation(tc.opts...))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tc.wantErr)
			}
			got := logged.String()
			if tc.wantLog == "" {
				if got != "" {
					t.Errorf("logged %q, want nothing", got)
				}
				return
			}
			if !strings.Contains(got, tc.wantLog) || strings.Count(got, "\n") != 1 {
				t.Errorf("logged %q, want one line containing %q", got, tc.wantLog)
			}
		})
	}
}

// TestStoreFailOpenIsLoggedByDefault: under WithStoreFailOpen a call passes
// uncounted when the store fails; without a handler that is logged at Warn.
// Failing closed returns the error instead, and logs nothing.
func TestStoreFailOpenIsLoggedByDefault(t *testing.T) {
	for _, failOpen := range []bool{true, false} {
		t.Run(map[bool]string{true: "fail open", false: "fail closed"}[failOpen], func(t *testing.T) {
			logged := captureDefaultLog(t)
			opts := []guard.LimitOption{guard.WithThreadLimit(5), guard.WithThreadStore(&failingStore{errors.New("store down")})}
			if failOpen {
				opts = append(opts, guard.WithStoreFailOpen())
			}
			m := newScript(textStep("hi"))
			ctx := guard.WithThread(context.Background(), "t1")
			_, err := wrap(m, modelCallLimit(opts...))(ctx, &tReq{Msgs: []msg{{Role: roleUser, Text: "hi"}}})
			if (err != nil) == failOpen {
				t.Fatalf("err = %v with fail open %v", err, failOpen)
			}
			want := `level=WARN msg="toolguard: store_error"`
			if got := logged.String(); strings.Contains(got, want) != failOpen {
				t.Errorf("logged %q; want it to contain %q: %v", got, want, failOpen)
			}
		})
	}
}
