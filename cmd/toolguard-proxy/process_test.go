//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// binary builds the command once per test process.
func binary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		if build.dir, build.err = os.MkdirTemp("", "toolguard-proxy-test"); build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "toolguard-proxy")
		out, err := exec.Command("go", "build", "-o", build.bin, ".").CombinedOutput()
		if err != nil {
			build.err = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.bin
}

// process is the command running as a process of its own.
type process struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncBuffer
	exited chan error
}

// startProcess starts the built command with args and -listen on a free
// loopback port, and waits until it listens.
func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	return startProcessEnv(t, nil, args...)
}

// startProcessEnv is startProcess with the variables env (NAME=value)
// added to the environment.
func startProcessEnv(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"-listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
	cmd.Env = append(cmd.Env, env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.Write([]byte(line + "\n"))
			var m struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "toolguard-proxy: listening" {
				listening <- m.Addr
			}
		}
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case p.addr = <-listening:
	case err := <-p.exited:
		t.Fatalf("the proxy exited before it listened: %v\n%s", err, p.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the proxy did not listen within 30s:\n%s", p.stderr.String())
	}
	return p
}

// waitStderr waits until the process's stderr holds s.
func (p *process) waitStderr(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.stderr.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr never held %q:\n%s", s, p.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Secrets the client sends, which the logs must never hold.
var secrets = []string{
	"sk-proj-AUTH-SECRET", "sk-ant-XAPIKEY-SECRET", "AIza-GOOG-HEADER-SECRET", "AIza-QUERY-SECRET",
	"Zanzibar-CONTENT-SECRET", "Paris-ARGUMENT-SECRET",
}

// SIGTERM lets a stream in flight finish: the process stops accepting
// connections, the client reads the rest of its stream (re-asked, so the
// guard is at work when the signal comes), and the process exits 0. The
// logs, at debug level, hold the request but no credential, query or
// content.
func TestSIGTERMFinishesStreamInFlight(t *testing.T) {
	t.Parallel()
	inSecond, release := make(chan struct{}), make(chan struct{})
	chunk := func(w http.ResponseWriter, delta, finish string) {
		io.WriteString(w, `data: {"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":`+delta+`,"finish_reason":`+finish+`}]}`+"\n\n")
		w.(http.Flusher).Flush()
	}
	up := fp.New(
		// The first attempt's call quotes content in its violation.
		fp.Reply(fp.Text("Let me check."), fp.Call("get_weather", `{"city": ["Zanzibar-CONTENT-SECRET"]}`)),
		// The re-ask's answer comes slowly: SIGTERM arrives in the middle.
		fp.Handle(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			chunk(w, `{"role":"assistant","content":null}`, "null")
			close(inSecond)
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			chunk(w, `{"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"get_weather","arguments":"{\"city\": "}}]}`, "null")
			chunk(w, `{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris-ARGUMENT-SECRET\"}"}}]}`, "null")
			chunk(w, `{}`, `"tool_calls"`)
			io.WriteString(w, "data: [DONE]\n\n")
		}),
	)
	defer up.Close()
	p := startProcess(t, "-upstream", up.URL, "-log-level", "debug")

	body := strings.Replace(streamBody, "Weather in Paris?", "Weather in Zanzibar-CONTENT-SECRET?", 1)
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/v1/chat/completions?key=AIza-QUERY-SECRET", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-proj-AUTH-SECRET")
	req.Header.Set("x-api-key", "sk-ant-XAPIKEY-SECRET")
	req.Header.Set("x-goog-api-key", "AIza-GOOG-HEADER-SECRET")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-inSecond

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitStderr(t, "toolguard-proxy: shutting down")
	// New connections are refused once the listener is closed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the proxy still accepts connections 10s after SIGTERM")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)

	s := readChatStream(t, resp.Body)
	if s.Text != "Let me check." || len(s.Calls) != 1 || s.Calls[0].Function.Arguments != `{"city": "Paris-ARGUMENT-SECRET"}` || !s.Done {
		t.Errorf("after SIGTERM the client read text %q, calls %+v, [DONE] %v; want the whole re-asked stream", s.Text, s.Calls, s.Done)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("the proxy exited with %v, want status 0\n%s", err, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not exit after its last request")
	}

	logs := p.stderr.String()
	t.Logf("the proxy's stderr:\n%s", logs)
	for _, want := range []string{`"msg":"toolguard-proxy: request"`, `"status":200`, `"msg":"toolguard: reask"`, `"msg":"toolguard-proxy: stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the logs hold no %s:\n%s", want, logs)
		}
	}
	for _, secret := range secrets {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs hold %q:\n%s", secret, logs)
		}
	}
	for line := range strings.Lines(logs) {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %q", line)
		}
	}
	// The upstream got the credentials: they pass through.
	if r := up.Requests()[0]; r.Header.Get("x-goog-api-key") != "AIza-GOOG-HEADER-SECRET" || r.RawQuery != "key=AIza-QUERY-SECRET" {
		t.Errorf("upstream got x-goog-api-key %q, query %q; want the client's", r.Header.Get("x-goog-api-key"), r.RawQuery)
	}
}

// A process that cannot listen exits 1 with a JSON log line saying why;
// bad flags exit 2.
func TestProcessExitStatus(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"-listen", ln.Addr().String(), "-upstream", "http://127.0.0.1:1"}, 1, "address already in use"},
		{[]string{"-upstream", "ftp://x"}, 2, "want an http or https URL"},
		{[]string{"-admin-listen", ln.Addr().String(), "-upstream", "http://127.0.0.1:1"}, 1, "toolguard-proxy: -admin-listen: listen tcp " + ln.Addr().String() + ": bind: address already in use"},
	} {
		out, err := exec.Command(binary(t), tc.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.status || !strings.Contains(string(out), tc.want) {
			t.Errorf("toolguard-proxy %q: %v\n%s\nwant exit status %d and %q", tc.args, err, out, tc.status, tc.want)
		}
	}
}

// The built binary's -version names a working tree's build "devel" with
// the revision go build stamped (or "unknown" where it stamped none), on
// one line, and exits 0.
func TestProcessVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(binary(t), "-version").CombinedOutput()
	if err != nil || !regexp.MustCompile(`^toolguard-proxy devel ([0-9a-f]{40}(-dirty)?|unknown)\n$`).Match(out) {
		t.Errorf("toolguard-proxy -version: %v, printed %q; want exit 0 and one line: toolguard-proxy devel REVISION", err, out)
	}
}

// SIGHUP makes the running process re-read its key file: a key removed is
// refused from then on, a key added served; a malformed file sent next
// keeps the keys in force and the log names its line; the process keeps
// serving through both.
func TestProcessSIGHUPReloadsKeys(t *testing.T) {
	t.Parallel()
	up := fp.New(fp.Reply(fp.Text("1")), fp.Reply(fp.Text("2")), fp.Reply(fp.Text("3")))
	defer up.Close()
	path := writeKeys(t, keyFile)
	p := startProcessEnv(t, []string{providerEnv + "=" + providerKey},
		"-upstream", up.URL, "-auth-keys", path, "-upstream-key-env", providerEnv, "-log-level", "debug")
	const keyC = "tg-tenant-C-key-0004"
	status := func(key string) int {
		resp, _ := post(t, "http://"+p.addr+"/v1/chat/completions", chatBody, "Authorization", "Bearer "+key)
		return resp.StatusCode
	}
	hup := func(waitFor string) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		p.waitStderr(t, waitFor)
	}
	if a, c := status(keyA), status(keyC); a != 200 || c != 401 {
		t.Fatalf("before SIGHUP: A %d, C %d; want 200 and 401", a, c)
	}
	if err := os.WriteFile(path, []byte(keyC+" C\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup(`"msg":"toolguard-proxy: the key file was reloaded"`)
	if a, c := status(keyA), status(keyC); a != 401 || c != 200 {
		t.Errorf("after SIGHUP: A %d, C %d; want 401 and 200", a, c)
	}
	if err := os.WriteFile(path, []byte(keyA+" A\n"+keyB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup(`"msg":"toolguard-proxy: the key file was not reloaded: the keys loaded before stay"`)
	if a, c := status(keyA), status(keyC); a != 401 || c != 200 {
		t.Errorf("after SIGHUP with a malformed file: A %d, C %d; want the keys before: 401 and 200", a, c)
	}
	logs := p.stderr.String()
	if !strings.Contains(logs, `"error":"line 2: want KEY TENANT, found 1 fields"`) {
		t.Errorf("the refused reload does not name line 2:\n%s", logs)
	}
	for _, k := range []string{keyA, keyB, keyC, providerKey} {
		if strings.Contains(logs, k) {
			t.Errorf("the logs hold the key %q", k)
		}
	}
	if len(up.Requests()) != 3 {
		t.Errorf("the upstream received %d requests, want the 3 with a key in force", len(up.Requests()))
	}
}
