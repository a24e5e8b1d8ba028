package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"testing"
)

// versionLine says the module version, "devel" for a working tree's
// build, the VCS revision or "unknown", and "-dirty" for a tree with
// changes.
func TestVersionLine(t *testing.T) {
	t.Parallel()
	const rev = "6eeb5fa0c1d2e3f405162738495a6b7c8d9e0f12"
	bi := func(version string, settings ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{Main: debug.Module{Path: "github.com/toolguard/toolguard", Version: version}}
		for i := 0; i+1 < len(settings); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return b
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"release", bi("v1.4.0", "vcs.revision", rev, "vcs.modified", "false"), "toolguard-proxy v1.4.0 " + rev},
		{"go install of a version, no vcs", bi("v1.4.0"), "toolguard-proxy v1.4.0 unknown"},
		{"working tree", bi("(devel)", "vcs.revision", rev), "toolguard-proxy devel " + rev},
		{"dirty working tree", bi("(devel)", "vcs", "git", "vcs.revision", rev, "vcs.modified", "true"), "toolguard-proxy devel " + rev + "-dirty"},
		{"pseudo-version", bi("v0.0.0-20261129075400-6eeb5fa0c1d2", "vcs.revision", rev), "toolguard-proxy v0.0.0-20261129075400-6eeb5fa0c1d2 " + rev},
		{"no version, no vcs", bi(""), "toolguard-proxy devel unknown"},
		{"no build info", nil, "toolguard-proxy devel unknown"},
	} {
		if got := versionLine(tc.bi); got != tc.want {
			t.Errorf("%s: versionLine = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// -version prints the running binary's version line and nothing else,
// and succeeds without -upstream and beside other flags: nothing is served.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-version"}, {"-version", "-thread-limit", "3"}, {"-upstream", "https://x", "-version"}} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, noEnv, &stdout, &stderr); err != nil {
			t.Fatalf("run(%q) = %v\n%s", args, err, stderr.String())
		}
		if got, want := stdout.String(), buildVersion()+"\n"; got != want || stderr.Len() != 0 {
			t.Errorf("run(%q) wrote stdout %q, stderr %q; want stdout %q", args, got, stderr.String(), want)
		}
	}
}
