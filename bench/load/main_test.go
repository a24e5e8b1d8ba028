//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as the tool's children: run
// re-executes its own binary (here, this one) with roleEnv set.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := runRole(role); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// The tool, with a few requests, builds toolguard-proxy, starts the three
// servers, prints a row for each proxy and mode with figures, the
// streams in flight, and the load average, and returns nil; and it leaves
// no child behind. The proxy runs at -log-level warn, where it does not
// log where it listens: the tool finds it all the same.
func TestRunPrintsEveryRow(t *testing.T) {
	if testing.Short() {
		t.Skip("builds toolguard-proxy and starts three processes; skipped under -short")
	}
	var out, errs strings.Builder
	if err := run(context.Background(), []string{"-c", "2", "-n", "2", "-rounds", "2", "-warmup", "2", "-streams", "2", "-proxy-args", "-log-level warn"}, &out, &errs); err != nil {
		t.Fatalf("run() = %v\nstderr:\n%s", err, errs.String())
	}
	t.Logf("output:\n%s", out.String())
	if !strings.HasPrefix(out.String(), "toolguard-proxy -upstream <fake> -log-level warn;") {
		t.Errorf("run() printed first %q, want the proxy's flags", strings.SplitN(out.String(), "\n", 2)[0])
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s*plain\s+sync\s+2\s+4\s+\d+\s+\d+\.\d\s+\d+\.\d$`),
		regexp.MustCompile(`(?m)^\s*guarded\s+sync\s+2\s+4\s+\d+\s+\d+\.\d\s+(\d+\.\d\d|n/a)\s+\d+\.\d$`),
		regexp.MustCompile(`(?m)^\s*plain\s+stream\s+2\s+4\s+\d+\s+\d+\.\d\s+\d+\.\d$`),
		regexp.MustCompile(`(?m)^\s*guarded\s+stream\s+2\s+4\s+\d+\s+\d+\.\d\s+(\d+\.\d\d|n/a)\s+\d+\.\d$`),
		regexp.MustCompile(`(?m)^\s*plain\s+2\s+-?\d+\.\d\s+-?\d+\.\d\d\s*$`),
		regexp.MustCompile(`(?m)^\s*guarded\s+2\s+-?\d+\.\d\s+-?\d+\.\d\d\s+(-?\d+\.\d\d|n/a)\s*$`),
		regexp.MustCompile(`load average`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("run() printed no line matching %s", want)
		}
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("after run() returned, processes %v are still children of the test", kids)
	}
}

// With -cpuprofile the tool builds toolguard-proxy with the profile tag
// and writes its CPU profile of each mode's measured rounds, one file per
// mode named after -cpuprofile, in pprof's gzipped format.
func TestRunWritesProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds toolguard-proxy and starts three processes; skipped under -short")
	}
	dir := t.TempDir()
	var out, errs strings.Builder
	if err := run(context.Background(), []string{"-c", "2", "-n", "20", "-rounds", "1", "-warmup", "0", "-streams", "0",
		"-cpuprofile", filepath.Join(dir, "cpu.pprof")}, &out, &errs); err != nil {
		t.Fatalf("run() = %v\nstderr:\n%s", err, errs.String())
	}
	for _, name := range []string{"cpu-sync.pprof", "cpu-stream.pprof"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("-cpuprofile: %v", err)
			continue
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s holds %d bytes starting %q, want a gzipped profile", name, len(b), b[:min(len(b), 8)])
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu.pprof")); err == nil {
		t.Errorf("-cpuprofile cpu.pprof wrote cpu.pprof itself, want one file per mode")
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("after run() returned, processes %v are still children of the test", kids)
	}
}

// profileFile puts the mode before the extension.
func TestProfileFile(t *testing.T) {
	for _, tc := range []struct{ file, mode, want string }{
		{"cpu.pprof", "sync", "cpu-sync.pprof"},
		{"/tmp/a.b/cpu", "stream", "/tmp/a.b/cpu-stream"},
	} {
		if got := profileFile(tc.file, tc.mode); got != tc.want {
			t.Errorf("profileFile(%q, %q) = %q, want %q", tc.file, tc.mode, got, tc.want)
		}
	}
}

// A server that fails to start ends the run with its error, and the
// servers already started are killed and reaped.
func TestRunKillsChildrenOnError(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; skipped under -short")
	}
	var out, errs strings.Builder
	err := run(context.Background(), []string{"-proxy-bin", "/bin/false", "-n", "1"}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "toolguard-proxy exited before it listened") {
		t.Fatalf("run(-proxy-bin /bin/false) = %v, want toolguard-proxy's exit", err)
	}
	if kids := children(t); len(kids) > 0 {
		t.Errorf("after run() failed, processes %v are still children of the test", kids)
	}
}

// Flags the tool cannot use are refused before anything starts.
func TestRunRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-c", "0"}, {"-n", "0"}, {"-rounds", "0"}, {"-streams", "-1"}, {"extra"}} {
		var out, errs strings.Builder
		if err := run(context.Background(), args, &out, &errs); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

// cpuTicks and rssKiB read this process's own figures.
func TestProcFigures(t *testing.T) {
	ticks, err := cpuTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel has charged this process a tick more.
	for n := ticks; n == ticks; {
		if n, err = cpuTicks(os.Getpid()); err != nil {
			t.Fatal(err)
		}
		if n < ticks {
			t.Fatalf("cpuTicks went from %d to %d", ticks, n)
		}
		if n > ticks {
			break
		}
	}
	rss, err := rssKiB(os.Getpid())
	if err != nil || rss <= 0 {
		t.Errorf("rssKiB(self) = %d, %v; want a positive size", rss, err)
	}
	if _, err := cpuTicks(-1); err == nil {
		t.Error("cpuTicks(-1) = nil error, want one")
	}
}

// children lists the processes whose parent is the test process.
func children(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			kids = append(kids, pid)
		}
	}
	return kids
}
