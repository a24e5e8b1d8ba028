package guard

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// oldToolSchemas is toolSchemas as it was, one map per call: the oracle
// of the differential test and the fuzzer. dups are the names it would
// report, in its order.
func oldToolSchemas(tools []Tool, fromCtx, fixed map[string]any) (ts map[string]any, dups []string) {
	ts = make(map[string]any, len(tools)+len(fromCtx)+len(fixed))
	for _, t := range tools {
		if _, seen := ts[t.Name]; seen && !slices.Contains(dups, t.Name) {
			dups = append(dups, t.Name)
		}
		ts[t.Name] = t.Schema
	}
	for _, layer := range []map[string]any{fromCtx, fixed} {
		for name, s := range layer {
			ts[name] = s
		}
	}
	return ts, dups
}

// checkToolSchemas holds toolSchemas to oldToolSchemas for one request:
// each name's schema source (compared by the string it is), the sorted
// names and the duplicates reported.
func checkToolSchemas(t *testing.T, tools []Tool, fromCtx, fixed map[string]any, asked []string) {
	t.Helper()
	want, wantDups := oldToolSchemas(tools, fromCtx, fixed)
	m := &toolArgValidation{cfg: validationConfig{schemas: fixed}}
	var got []Event
	ctx := WithObserver(WithToolSchemas(context.Background(), fromCtx), ObserverFunc(func(_ context.Context, e Event) { got = append(got, e) }))
	ts := m.toolSchemas(ctx, tools)
	for _, name := range append(asked, slices.Collect(maps.Keys(want))...) {
		s, ok := ts.lookup(name)
		ws, wok := want[name]
		if ok != wok || fmt.Sprint(s) != fmt.Sprint(ws) {
			t.Fatalf("lookup(%q) = %v, %v; the map's = %v, %v (tools %v, ctx %v, fixed %v)", name, s, ok, ws, wok, tools, fromCtx, fixed)
		}
	}
	wantNames := slices.Sorted(maps.Keys(want))
	if names := ts.names(); !slices.Equal(names, wantNames) {
		t.Fatalf("names() = %q, the map's = %q", names, wantNames)
	}
	switch {
	case len(wantDups) == 0 && len(got) != 0:
		t.Fatalf("events %+v for tools %v, which repeat no name", got, tools)
	case len(wantDups) > 0 && (len(got) != 1 || got[0].Tool != wantDups[0] || got[0].Kind != EventMisconfigured):
		t.Fatalf("events %+v for tools %v, want one EventMisconfigured for %q", got, tools, wantDups[0])
	case len(wantDups) > 0:
		if m.toolSchemas(ctx, tools); len(got) != 1 {
			t.Fatalf("duplicates reported %d times, want once", len(got))
		}
		if dups := duplicateNames(tools, ts.byName); !slices.Equal(dups, wantDups) {
			t.Fatalf("duplicateNames(%v) = %q, the map's = %q", tools, dups, wantDups)
		}
	}
}

func TestToolSchemasMatchesMap(t *testing.T) {
	t.Parallel()
	many := make([]Tool, 40)
	for i := range many {
		many[i] = Tool{Name: fmt.Sprintf("t%d", i%23), Schema: fmt.Sprintf("s%d", i)}
	}
	tests := []struct {
		name           string
		tools          []Tool
		fromCtx, fixed map[string]any
	}{
		{"none", nil, nil, nil},
		{"one", []Tool{{Name: "a", Schema: "sa"}}, nil, nil},
		{"nil schema", []Tool{{Name: "a"}, {Name: "b", Schema: "sb"}}, nil, nil},
		{"repeated, the last counts", []Tool{{Name: "a", Schema: "1"}, {Name: "b"}, {Name: "a", Schema: "2"}, {Name: "b", Schema: "3"}, {Name: "a", Schema: "4"}}, nil, nil},
		{"layers", []Tool{{Name: "a", Schema: "1"}, {Name: "b", Schema: "2"}},
			map[string]any{"b": "ctx", "c": "ctx"}, map[string]any{"c": "fixed", "d": "fixed"}},
		{"a layer's nil", []Tool{{Name: "a", Schema: "1"}}, map[string]any{"a": nil}, nil},
		{"many tools", many, map[string]any{"t3": "ctx"}, map[string]any{"t4": "fixed"}},
		{"many distinct", many[:23], nil, nil},
		{"empty name", []Tool{{Name: "", Schema: "1"}, {Name: "", Schema: "2"}}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkToolSchemas(t, tc.tools, tc.fromCtx, tc.fixed, []string{"a", "b", "c", "d", "e", "", "t3", "t40"})
		})
	}
}

// FuzzToolSchemas holds toolSchemas to the map it replaces, for tools,
// layers and calls named from a few letters, so that names repeat.
func FuzzToolSchemas(f *testing.F) {
	f.Add([]byte("abcab"), []byte("b"), []byte("c"), []byte("abcdx"))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), []byte(""), []byte("a"), []byte("ab"))
	f.Add([]byte("abcdefghijklmnopqrstuvwxyz"), []byte("zz"), []byte(""), []byte("az?"))
	f.Add([]byte("abcdefghijklmnopqrsabcdefghijklmnopqrs"), []byte("s"), []byte("q"), []byte("sqa"))
	f.Fuzz(func(t *testing.T, toolNames, ctxNames, fixedNames, asked []byte) {
		if len(toolNames) > 200 {
			return
		}
		tools := make([]Tool, len(toolNames))
		for i, c := range toolNames {
			tools[i] = Tool{Name: string(c % 8), Schema: fmt.Sprintf("tool %d", i)}
			if c%5 == 0 {
				tools[i].Schema = nil
			}
		}
		layer := func(names []byte, what string) map[string]any {
			if len(names) == 0 {
				return nil
			}
			m := map[string]any{}
			for i, c := range names {
				m[string(c%8)] = fmt.Sprintf("%s %d", what, i)
			}
			return m
		}
		var ask []string
		for _, c := range asked {
			ask = append(ask, string(c%9))
		}
		checkToolSchemas(t, tools, layer(ctxNames, "ctx"), layer(fixedNames, "fixed"), ask)
	})
}
