package support_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLibraryDoesNotImportSupport: the library's packages (everything but
// internal/support itself and examples/eval) import nothing under
// internal/support in their non-test files, and no non-test file under
// internal/ imports "testing".
func TestLibraryDoesNotImportSupport(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	const module = "github.com/toolguard/toolguard/"
	out, err := exec.Command(goBin, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		support := strings.HasPrefix(pkg, module+"internal/support") || pkg == module+"examples/eval"
		for _, imp := range imports {
			if !support && strings.HasPrefix(imp, module+"internal/support") {
				t.Errorf("%s imports %s outside its tests", pkg, imp)
			}
			if imp == "testing" && strings.HasPrefix(pkg, module+"internal/") {
				t.Errorf("%s imports testing outside its tests", pkg)
			}
		}
	}
}
