package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// violations returns err's violations as "path keyword" strings, or nil if
// err is not a *validation.Error naming tool.
func violations(t *testing.T, err error, tool string) []string {
	t.Helper()
	var ve *validation.Error
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *validation.Error", err, err)
	}
	if ve.Tool != tool {
		t.Errorf("validation.Error.Tool = %q, want %q", ve.Tool, tool)
	}
	var out []string
	for _, v := range ve.Violations {
		out = append(out, v.Path+" "+v.Keyword)
	}
	return out
}

func TestNewToolCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    string
		want    WeatherArgs // the arguments fn receives
		wantErr []string    // violations, "path keyword"
	}{
		{name: "valid", args: `{"city": "Paris", "units": "celsius"}`, want: WeatherArgs{City: "Paris", Units: "celsius"}},
		{name: "null on an optional field is removed", args: `{"city": "Paris", "units": null}`, want: WeatherArgs{City: "Paris"}},
		{name: "wrong type", args: `{"city": 42}`, wantErr: []string{"/city type"}},
		{name: "missing required", args: `{}`, wantErr: []string{"/city required"}},
		{name: "empty means {}", args: ``, wantErr: []string{"/city required"}},
		{name: "unknown key", args: `{"city": "Paris", "country": "FR"}`, wantErr: []string{"/country additionalProperties"}},
		{name: "not JSON", args: `{"city": "Par`, wantErr: []string{" json"}},
		{name: "not an object", args: `["Paris"]`, wantErr: []string{" json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *WeatherArgs
			tool := toolstage.NewTool("get_weather", "Weather.", func(_ context.Context, a WeatherArgs) (string, error) {
				got = &a
				return "sunny", nil
			})
			out, err := tool.Call(context.Background(), tc.args)
			if tc.wantErr != nil {
				if got != nil {
					t.Errorf("Call(%q) ran fn with %+v, want it not run", tc.args, *got)
				}
				if v := violations(t, err, "get_weather"); !reflect.DeepEqual(v, tc.wantErr) {
					t.Errorf("Call(%q) violations = %q, want %q", tc.args, v, tc.wantErr)
				}
				return
			}
			if err != nil || out != "sunny" || got == nil || *got != tc.want {
				t.Errorf("Call(%q) = %q, %v with fn args %+v; want %q, nil with %+v", tc.args, out, err, got, "sunny", tc.want)
			}
		})
	}
}

func TestNewToolRunsValidate(t *testing.T) {
	t.Parallel()
	ran := false
	book := toolstage.NewTool("book", "Books.", func(context.Context, Booking) (string, error) { ran = true; return "", nil })
	_, err := book.Call(context.Background(), `{"from": "2025-05-02", "to": "2025-05-01"}`)
	if v := violations(t, err, "book"); !reflect.DeepEqual(v, []string{"/to validate"}) || ran {
		t.Errorf("Call with to < from: violations %q, fn ran %v; want [/to validate] and fn not run", v, ran)
	}
	if s, ok := book.Schema().(*validation.Schema); !ok || s != validation.Typed[Booking]() {
		t.Errorf("Schema() = %v, want validation.Typed[Booking]()", book.Schema())
	}
}

func TestNewSchemaToolCall(t *testing.T) {
	t.Parallel()
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"id":   map[string]any{"type": "integer"},
			"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required": []any{"id"},
	}
	tests := []struct {
		name    string
		schema  any
		args    string
		want    map[string]any
		wantErr []string
	}{
		{name: "numbers stay exact", schema: schema, args: `{"id": 12345678901234567890}`,
			want: map[string]any{"id": json.Number("12345678901234567890")}},
		{name: "null on an optional field is removed", schema: schema, args: `{"id": 1, "tags": null}`,
			want: map[string]any{"id": json.Number("1")}},
		{name: "invalid", schema: schema, args: `{"id": "one"}`, wantErr: []string{"/id type"}},
		{name: "raw JSON schema", schema: `{"type": "object", "required": ["q"]}`, args: `{}`, wantErr: []string{"/q required"}},
		{name: "nil schema takes any object", schema: nil, args: `{"anything": [1]}`,
			want: map[string]any{"anything": []any{json.Number("1")}}},
		{name: "nil schema still wants an object", schema: nil, args: `"text"`, wantErr: []string{" json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got map[string]any
			tool := toolstage.NewSchemaTool("records", "Records.", tc.schema, func(_ context.Context, args map[string]any) (string, error) {
				got = args
				return "ok", nil
			})
			out, err := tool.Call(context.Background(), tc.args)
			if tc.wantErr != nil {
				if v := violations(t, err, "records"); !reflect.DeepEqual(v, tc.wantErr) || got != nil {
					t.Errorf("Call(%q) violations = %q (fn ran: %v), want %q and fn not run", tc.args, v, got != nil, tc.wantErr)
				}
				return
			}
			if err != nil || out != "ok" || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Call(%q) = %q, %v with fn args %#v; want ok, nil with %#v", tc.args, out, err, got, tc.want)
			}
		})
	}
}

// TestNewSchemaToolPanicsOnBadSchema: a schema that does not compile is a
// mistake at construction, as NewTool's type without a schema is, never a
// tool that accepts anything.
func TestNewSchemaToolPanicsOnBadSchema(t *testing.T) {
	t.Parallel()
	for _, schema := range []any{`{"type": 12}`, `{"type": "object"`, map[string]any{"$ref": "http://example.com/s.json"}} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, `toolstage: NewSchemaTool("records"): the schema does not compile: `) {
					t.Errorf("NewSchemaTool(%v) panicked with %q, want a message naming the tool and the compile error", schema, msg)
				}
			}()
			toolstage.NewSchemaTool("records", "Records.", schema, func(context.Context, map[string]any) (string, error) { return "ok", nil })
		}()
	}
}

func TestNewSchemaToolKeepsSchema(t *testing.T) {
	t.Parallel()
	raw := json.RawMessage(`{"type": "object"}`)
	tool := toolstage.NewSchemaTool("s", "d", raw, func(context.Context, map[string]any) (string, error) { return "", nil })
	if got, ok := tool.Schema().(json.RawMessage); !ok || string(got) != string(raw) || tool.Name() != "s" || tool.Description() != "d" {
		t.Errorf("tool = %q %q %#v, want s d and the schema as given", tool.Name(), tool.Description(), tool.Schema())
	}
}

// The agent package imports langchaingo's llms, never agents, chains or
// tools (which pull in template engines and starlark).
func TestAgentImportsStayLight(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/toolguard/toolguard/agent").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		for _, banned := range []string{"/langchaingo/agents", "/langchaingo/chains", "/langchaingo/tools", "/langchaingo/prompts", "go.starlark.net"} {
			if strings.Contains(d, banned) {
				t.Errorf("agent depends on %s", d)
			}
		}
	}
}
