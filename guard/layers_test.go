package guard_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/toolguard/toolguard/"

// goList runs go list with args over the module and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// top returns the top-level folder of a package of the module ("" for the
// root, or a package outside the module).
func top(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, module)
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// hosts are the folders that may compile langchaingo: its adapter, its
// agent loop, and the programs that use them.
var hosts = []string{"middleware", "agent", "examples", "cmd"}

// TestLangchaingoOnlyInItsAdapter: no package outside middleware/, agent/
// and the programs compiles langchaingo — guard, its stores, otelguard,
// the engines, httpguard and the evaluation included.
func TestLangchaingoOnlyInItsAdapter(t *testing.T) {
	t.Parallel()
	for _, pkg := range goList(t, module+"...") {
		if slices.Contains(hosts, top(pkg)) {
			continue
		}
		for _, dep := range goList(t, "-deps", pkg) {
			if strings.HasPrefix(dep, "github.com/tmc/langchaingo") {
				t.Errorf("%s compiles %s (go list -deps %s)", pkg, dep, pkg)
				break
			}
		}
	}
}

// TestFoldersImportOneWay: no two top-level folders import each other,
// counting the packages' own imports (not their tests'), as
//
//	go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...
//
// collapsed to top-level folders shows it; and internal/ holds leaf
// helpers only: no package under it imports a package of the module
// outside internal/.
func TestFoldersImportOneWay(t *testing.T) {
	t.Parallel()
	pairs := make(map[[2]string]string) // folder pair -> an import that makes it
	for _, line := range goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...") {
		fields := strings.Fields(line)
		from := top(fields[0])
		for _, imp := range fields[1:] {
			to := top(imp)
			if !strings.HasPrefix(imp, module) || to == from {
				continue
			}
			if from == "internal" {
				t.Errorf("%s imports %s: internal/ holds leaf helpers only", fields[0], imp)
			}
			pairs[[2]string{from, to}] = fields[0] + " -> " + imp
		}
	}
	for p, why := range pairs {
		if back, ok := pairs[[2]string{p[1], p[0]}]; ok && p[0] < p[1] {
			t.Errorf("%s and %s import each other: %s; %s", p[0], p[1], why, back)
		}
	}
}
