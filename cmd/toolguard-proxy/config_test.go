package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// Bad flags are refused before anything starts, with a message naming
// the flag, then the usage, and exit status 2 (errUsage).
func TestBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-upstream is required"},
		{[]string{"-upstream", "api.openai.com"}, "want an http or https URL"},
		{[]string{"-upstream", "https://x?key=1"}, "no query"},
		{[]string{"-upstream", "https://x", "-max-body", "lots"}, "-max-body"},
		{[]string{"-upstream", "https://x", "-max-body", "0"}, "-max-body"},
		{[]string{"-upstream", "https://x", "-run-limit", "5", "-thread-limit", "2"}, "-run-limit 5 is larger than -thread-limit 2"},
		{[]string{"-upstream", "https://x", "-thread-limit", "-1"}, "must not be negative"},
		{[]string{"-upstream", "https://x", "-max-retries", "-1"}, "must not be negative"},
		{[]string{"-upstream", "https://x", "-limit-exit", "stop"}, "-limit-exit"},
		{[]string{"-upstream", "https://x", "-unknown-tools", "drop"}, `-unknown-tools "drop": want pass or reject`},
		{[]string{"-upstream", "https://x", "-max-inflight", "-1"}, "-max-inflight must not be negative"},
		{[]string{"-upstream", "https://x", "-redis", "redis://127.0.0.1:6379"}, "-redis keeps thread counts: it needs -thread-limit"},
		{[]string{"-upstream", "https://x", "-log-level", "loud"}, "-log-level"},
		{[]string{"-upstream", "https://x", "-shutdown-timeout", "0s"}, "must be positive"},
		{[]string{"-upstream", "https://x", "extra"}, `unexpected argument "extra"`},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, &stdout, &stderr)
		if !errors.Is(err, errUsage) {
			t.Errorf("run(%q) = %v, want errUsage", tc.args, err)
		}
		if !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "-upstream URL") {
			t.Errorf("run(%q) wrote\n%s\nwant %q and the usage", tc.args, stderr.String(), tc.want)
		}
	}
}

// -h writes the usage to stdout and succeeds.
func TestHelp(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stdout, &stderr); err != nil {
		t.Fatalf("run(-h) = %v", err)
	}
	if !strings.Contains(stdout.String(), "X-Toolguard-Thread") || stderr.Len() != 0 {
		t.Errorf("run(-h) wrote stdout\n%s\nstderr\n%s", stdout.String(), stderr.String())
	}
}

// A -redis URL that does not parse is an error naming the flag, and never
// the password.
func TestBadRedisURL(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"-upstream", "https://x", "-thread-limit", "3", "-redis", "http://:hunter2@x/0"}, &stderr, &stderr)
	if err == nil || !strings.Contains(err.Error(), "-redis") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("run with a bad -redis = %v, want an error naming -redis and not the password", err)
	}
}
