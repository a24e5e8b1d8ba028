package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/guard"
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
		{[]string{"-upstream", "https://x", "-history", "fix"}, `-history "fix": want off, repair or refuse`},
		{[]string{"-upstream", "https://x", "-max-inflight", "-1"}, "-max-inflight must not be negative"},
		{[]string{"-upstream", "https://x", "-redis", "redis://127.0.0.1:6379"}, "-redis keeps thread counts: it needs -thread-limit, -model-call-limit, -mcp-session-limit or -mcp-thread-limit"},
		{[]string{"-upstream", "https://x", "-model-call-limit", "-1"}, "-model-call-limit must not be negative"},
		{[]string{"-upstream", "https://x", "-thread-limit", "3", "-store-fail-open"}, "-store-fail-open needs -redis"},
		{[]string{"-upstream", "https://x", "-log-level", "loud"}, "-log-level"},
		{[]string{"-upstream", "https://x", "-shutdown-timeout", "0s"}, "must be positive"},
		{[]string{"-upstream", "https://x", "extra"}, `unexpected argument "extra"`},
		{[]string{"-upstream", "https://x", "-admin-listen", "127.0.0.1:8080"}, `-admin-listen "127.0.0.1:8080" is -listen's address`},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
		{[]string{"-upstream", "https://x", "-mcp", "maybe"}, `-mcp "maybe": want on or off`},
		{[]string{"-upstream", "https://x", "-mcp-session-limit", "-1"}, "-mcp-session-limit and -mcp-thread-limit must not be negative"},
		{[]string{"-stdio"}, "-stdio needs the server's command after the flags"},
		{[]string{"-upstream", "https://x", "-upstream-mcp", "https://m", "-mcp", "off"}, "-upstream-mcp needs -mcp on"},
		{[]string{"-upstream", "https://x", "-upstream-mcp-key-env", "K"}, "-upstream-mcp-key-env needs -upstream-mcp"},
		{[]string{"-stdio", "-mcp", "off", "--", "server"}, "-stdio wraps an MCP server: it cannot be used with -mcp off"},
		{[]string{"-stdio", "-mcp-thread-limit", "2", "--", "server"}, "-mcp-thread-limit counts the threads of X-Toolguard-Thread, which stdio has not"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, noEnv, &stdout, &stderr)
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
	if err := run(context.Background(), []string{"-h"}, noEnv, &stdout, &stderr); err != nil {
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
	err := run(context.Background(), []string{"-upstream", "https://x", "-thread-limit", "3", "-redis", "http://:hunter2@x/0"}, noEnv, &stderr, &stderr)
	if err == nil || !strings.Contains(err.Error(), "-redis") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("run with a bad -redis = %v, want an error naming -redis and not the password", err)
	}
}

// noEnv is an environment without variables.
func noEnv(string) (string, bool) { return "", false }

// envOf is the environment vars, and records in asked each name looked up.
func envOf(vars map[string]string, asked *[]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if asked != nil {
			*asked = append(*asked, name)
		}
		v, ok := vars[name]
		return v, ok
	}
}

// Each flag's TOOLGUARD_ variable sets it when the command line does not.
func TestEnvSetsFlags(t *testing.T) {
	t.Parallel()
	env := envOf(map[string]string{
		"TOOLGUARD_UPSTREAM":      "https://api.example",
		"TOOLGUARD_THREAD_LIMIT":  "7",
		"TOOLGUARD_FAIL_CLOSED":   "true",
		"TOOLGUARD_MAX_BODY":      "1KiB",
		"TOOLGUARD_LIMIT_EXIT":    "error",
		"TOOLGUARD_BODY_TIMEOUT":  "3s",
		"TOOLGUARD_UNKNOWN_TOOLS": "reject",
	}, nil)
	var out bytes.Buffer
	cfg, err := parseConfig(nil, env, &out, &out)
	if err != nil {
		t.Fatalf("parseConfig = %v\n%s", err, out.String())
	}
	if cfg.upstream.String() != "https://api.example" || cfg.threadLimit != 7 || !cfg.failClosed || cfg.maxBody != 1024 ||
		cfg.limitExit != guard.ExitError || cfg.bodyTimeout != 3*time.Second || cfg.unknownTools != guard.UnknownReject {
		t.Errorf("from the environment: upstream %v, thread limit %d, fail closed %v, max body %d, limit exit %v, body timeout %v, unknown tools %v",
			cfg.upstream, cfg.threadLimit, cfg.failClosed, cfg.maxBody, cfg.limitExit, cfg.bodyTimeout, cfg.unknownTools)
	}
	if cfg.listen != "127.0.0.1:8080" || cfg.maxRetries != 2 {
		t.Errorf("flags without a variable: listen %q, max retries %d; want the defaults", cfg.listen, cfg.maxRetries)
	}
}

// The command line wins over the environment, whatever the order, and a
// variable the command line overrides is not checked for meaning (its
// flag's value is the command line's).
func TestCommandLineWinsOverEnv(t *testing.T) {
	t.Parallel()
	env := envOf(map[string]string{
		"TOOLGUARD_UPSTREAM":     "https://from-env.example",
		"TOOLGUARD_THREAD_LIMIT": "7",
		"TOOLGUARD_FAIL_CLOSED":  "true",
		"TOOLGUARD_LIMIT_EXIT":   "stop", // wrong, but overridden
	}, nil)
	args := []string{"-thread-limit", "2", "-fail-closed=false", "-upstream", "https://from-args.example", "-limit-exit", "end"}
	var out bytes.Buffer
	cfg, err := parseConfig(args, env, &out, &out)
	if err != nil {
		t.Fatalf("parseConfig = %v\n%s", err, out.String())
	}
	if cfg.upstream.Host != "from-args.example" || cfg.threadLimit != 2 || cfg.failClosed || cfg.limitExit != guard.ExitEnd {
		t.Errorf("upstream %v, thread limit %d, fail closed %v, limit exit %v; want the command line's", cfg.upstream, cfg.threadLimit, cfg.failClosed, cfg.limitExit)
	}
	// An error names the command line's flag when the command line set it.
	_, err = parseConfig([]string{"-thread-limit", "-1"}, envOf(map[string]string{"TOOLGUARD_UPSTREAM": "https://x", "TOOLGUARD_THREAD_LIMIT": "3"}, nil), &out, &out)
	if !errors.Is(err, errUsage) || !strings.Contains(out.String(), "-run-limit and -thread-limit must not be negative") {
		t.Errorf("a bad -thread-limit over a good TOOLGUARD_THREAD_LIMIT: %v\n%s", err, out.String())
	}
}

// TOOLGUARD_ names that match no flag (tests and CI set their own) are
// ignored: never looked up, never an error; -version and -stdio are not
// read from the environment.
func TestUnknownEnvIgnored(t *testing.T) {
	t.Parallel()
	var asked []string
	env := envOf(map[string]string{
		"TOOLGUARD_REQUIRE_REDIS": "1",
		"TOOLGUARD_NPM_DIR":       "/tmp/npm",
		"TOOLGUARD_REQUIRE_NPM":   "yes",
		"TOOLGUARD_VERSION":       "1.2.3",
		"TOOLGUARD_STDIO":         "true",
		"TOOLGUARD_":              "x",
	}, &asked)
	var stdout, stderr bytes.Buffer
	cfg, err := parseConfig([]string{"-upstream", "https://x"}, env, &stdout, &stderr)
	if err != nil {
		t.Fatalf("parseConfig = %v\n%s", err, stderr.String())
	}
	if cfg.env != nil || cfg.threadLimit != 0 || cfg.stdio != nil || stdout.Len() != 0 {
		t.Errorf("env %v, thread limit %d, stdout %q: want nothing from the environment", cfg.env, cfg.threadLimit, stdout.String())
	}
	seen := map[string]bool{}
	for _, name := range asked {
		seen[name] = true
	}
	for _, name := range []string{"TOOLGUARD_REQUIRE_REDIS", "TOOLGUARD_NPM_DIR", "TOOLGUARD_REQUIRE_NPM", "TOOLGUARD_VERSION", "TOOLGUARD_STDIO"} {
		if seen[name] {
			t.Errorf("%s was looked up", name)
		}
	}
	if !seen["TOOLGUARD_THREAD_LIMIT"] || !seen["TOOLGUARD_READ_HEADER_TIMEOUT"] {
		t.Errorf("looked up %q; want every flag's variable", asked)
	}
}

// A bad value in a variable is refused before anything starts, with one
// line naming the variable, then the usage, and exit status 2.
func TestBadEnvValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"TOOLGUARD_THREAD_LIMIT": "lots"}, `TOOLGUARD_THREAD_LIMIT "lots": not a value for -thread-limit`},
		{map[string]string{"TOOLGUARD_FAIL_CLOSED": "yes"}, `TOOLGUARD_FAIL_CLOSED "yes": not a value for -fail-closed`},
		{map[string]string{"TOOLGUARD_BODY_TIMEOUT": "soon"}, `TOOLGUARD_BODY_TIMEOUT "soon": not a value for -body-timeout`},
		{map[string]string{"TOOLGUARD_THREAD_LIMIT": ""}, `TOOLGUARD_THREAD_LIMIT "": not a value for -thread-limit`},
		{map[string]string{"TOOLGUARD_LIMIT_EXIT": "stop"}, `TOOLGUARD_LIMIT_EXIT "stop": want continue, end or error`},
		{map[string]string{"TOOLGUARD_MAX_BODY": "lots"}, `TOOLGUARD_MAX_BODY "lots": want a size`},
		{map[string]string{"TOOLGUARD_MAX_INFLIGHT": "-1"}, `TOOLGUARD_MAX_INFLIGHT must not be negative`},
		{map[string]string{"TOOLGUARD_UPSTREAM": "api.openai.com"}, `TOOLGUARD_UPSTREAM "api.openai.com": want an http or https URL`},
		{map[string]string{"TOOLGUARD_UPSTREAM": ""}, `TOOLGUARD_UPSTREAM is required`},
		{map[string]string{"TOOLGUARD_REDIS": "redis://127.0.0.1:6379"}, `TOOLGUARD_REDIS keeps thread counts: it needs -thread-limit`},
		{map[string]string{"TOOLGUARD_RUN_LIMIT": "5", "TOOLGUARD_THREAD_LIMIT": "2"}, `TOOLGUARD_RUN_LIMIT 5 is larger than TOOLGUARD_THREAD_LIMIT 2`},
	} {
		vars := map[string]string{"TOOLGUARD_UPSTREAM": "https://x"}
		for k, v := range tc.vars {
			vars[k] = v
		}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), nil, envOf(vars, nil), &stdout, &stderr)
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if !errors.Is(err, errUsage) || !strings.HasPrefix(first, "toolguard-proxy: "+tc.want) {
			t.Errorf("environment %q: run = %v, first line %q; want errUsage and %q", tc.vars, err, first, tc.want)
		}
		if !strings.Contains(stderr.String(), "-upstream URL") {
			t.Errorf("environment %q: no usage after the reason:\n%s", tc.vars, stderr.String())
		}
	}
	// A Redis URL that does not parse names the variable, never the password.
	var stderr bytes.Buffer
	env := envOf(map[string]string{"TOOLGUARD_UPSTREAM": "https://x", "TOOLGUARD_THREAD_LIMIT": "3", "TOOLGUARD_REDIS": "http://:hunter2@x/0"}, nil)
	err := run(context.Background(), nil, env, &stderr, &stderr)
	if err == nil || !strings.HasPrefix(err.Error(), "toolguard-proxy: TOOLGUARD_REDIS: ") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a bad TOOLGUARD_REDIS: %v; want an error naming TOOLGUARD_REDIS and not the password", err)
	}
}
