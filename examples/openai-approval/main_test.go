package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/output.golden with the example's output")

// program is the example built, run with a temporary directory of its own.
type program struct {
	bin string
	tmp string // the TMPDIR every run of it gets
}

// TestProgram builds the example once, so that each run of it in the
// subtests is a process of its own, as `go run .` is; each subtest has a
// temporary directory of its own.
func TestProgram(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "openai-approval")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name string
		test func(*testing.T, *program)
	}{
		{"TwoRuns", testTwoRuns},
		{"ConcurrentApproves", testConcurrentApproves},
		{"TamperedConversation", testTamperedConversation},
		{"ApproveFirst", testApproveFirst},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, &program{bin: bin, tmp: t.TempDir()}) })
	}
}

// cmd returns the command that runs the program with args, its temporary
// directory p.tmp, its output and errors in one buffer, in order.
func (p *program) cmd(out *bytes.Buffer, args ...string) *exec.Cmd {
	cmd := exec.Command(p.bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+p.tmp, "TMP="+p.tmp, "TEMP="+p.tmp)
	cmd.Stdout, cmd.Stderr = out, out
	return cmd
}

// run runs the program with args and returns what it printed, as a shell
// shows `go run . args` (with "exit status N" when it fails, and
// /tmp for its temporary directory), and its exit code.
func (p *program) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := exitCode(t, p.cmd(&out, args...).Run())
	return p.transcript(out.String(), code, args), code
}

func (p *program) transcript(out string, code int, args []string) string {
	cmdline := strings.Join(append([]string{"$ go run ."}, args...), " ")
	out = strings.ReplaceAll(out, filepath.Join(p.tmp, "toolguard-openai-approval"), "/tmp/toolguard-openai-approval")
	if code != 0 {
		out += fmt.Sprintf("exit status %d\n", code)
	}
	return cmdline + "\n" + out
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// testTwoRuns runs the example as its README does: a run that pauses, a
// second process that accepts and finishes, a third that replays the same
// interrupt and is refused. The transfer runs once, in the second, and the
// whole output is pinned. Refresh it with go test -update.
func testTwoRuns(t *testing.T, p *program) {
	first, code1 := p.run(t)
	second, code2 := p.run(t, "-approve")
	replay, code3 := p.run(t, "-approve")
	if code1 != 0 || code2 != 0 || code3 != 1 {
		t.Errorf("exit codes %d, %d, %d; want 0, 0, 1", code1, code2, code3)
	}
	if n := strings.Count(first+second+replay, "tool transfer_money runs"); n != 1 || !strings.Contains(second, "tool transfer_money runs") {
		t.Errorf("the transfer ran %d times, want once, in the second run", n)
	}
	if !strings.Contains(replay, "interrupt refused: it was already resumed") {
		t.Errorf("the replay is not refused as resumed:\n%s", replay)
	}
	if strings.Contains(first, `"user_id"`) {
		t.Errorf("the first run shows user_id in what the provider received:\n%s", first)
	}
	got := first + "\n" + second + "\n" + replay
	golden := filepath.Join("testdata", "output.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("output:\n%s\nwant (%s):\n%s", got, golden, want)
	}
}

// testConcurrentApproves is the replay as a race: four processes resume
// the same interrupt at once. The claim in the FileCheckpointer lets one
// of them run the transfer; the others are refused and run nothing.
func testConcurrentApproves(t *testing.T, p *program) {
	if out, code := p.run(t); code != 0 {
		t.Fatalf("the first run failed:\n%s", out)
	}
	outs := make([]bytes.Buffer, 4)
	cmds := make([]*exec.Cmd, len(outs))
	for i := range cmds {
		cmds[i] = p.cmd(&outs[i], "-approve")
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	ran, refused := 0, 0
	for i, cmd := range cmds {
		code := exitCode(t, cmd.Wait())
		out := outs[i].String()
		switch {
		case code == 0 && strings.Count(out, "tool transfer_money runs") == 1:
			ran++
		case code == 1 && strings.Contains(out, "interrupt refused") && !strings.Contains(out, "tool transfer_money runs"):
			refused++
		default:
			t.Errorf("process %d: exit %d:\n%s", i, code, out)
		}
	}
	if ran != 1 || refused != len(cmds)-1 {
		t.Errorf("%d processes ran the transfer and %d were refused; want 1 and %d", ran, refused, len(cmds)-1)
	}
}

// testTamperedConversation: the conversation travels in the paused run's
// file, signed with the interrupt. Changed there, the resume is refused
// and nothing runs; the file as written still resumes after.
func testTamperedConversation(t *testing.T, p *program) {
	if out, code := p.run(t); code != 0 {
		t.Fatalf("the first run failed:\n%s", out)
	}
	path := filepath.Join(p.tmp, "toolguard-openai-approval", "paused.json")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Replace(orig, []byte("send Bob 120 EUR"), []byte("send Eve 120 EUR"), 1)
	if bytes.Equal(forged, orig) {
		t.Fatalf("the paused run holds no user message to change:\n%s", orig)
	}
	if err := os.WriteFile(path, forged, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := p.run(t, "-approve")
	if code != 1 || !strings.Contains(out, "interrupt refused: its signature does not verify") || strings.Contains(out, "tool transfer_money runs") {
		t.Errorf("the tampered run (exit %d):\n%s\nwant refused, signature, no transfer", code, out)
	}
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := p.run(t, "-approve"); code != 0 || !strings.Contains(out, "tool transfer_money runs") {
		t.Errorf("the untampered run after a refused one (exit %d):\n%s\nwant the transfer", code, out)
	}
}

// testApproveFirst: -approve with nothing paused says so.
func testApproveFirst(t *testing.T, p *program) {
	out, code := p.run(t, "-approve")
	if code != 1 || !strings.Contains(out, "no paused run in /tmp/toolguard-openai-approval/paused.json: run without -approve first") {
		t.Errorf("go run . -approve with nothing paused (exit %d):\n%s", code, out)
	}
}

// TestReadme: the README shows the output of the three runs as it is.
func TestReadme(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "output.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```\n"+string(golden)+"```\n") {
		t.Errorf("README.md does not show the output of the three runs:\n%s", golden)
	}
}
