//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// readyTimeout bounds how long a child may take to listen.
const readyTimeout = 60 * time.Second

// child is a server the tool started in a process of its own.
type child struct {
	name   string
	cmd    *exec.Cmd
	addr   string        // host:port it listens on
	exited chan struct{} // closed once the process is reaped
	tail   *tail         // its last output lines, for errors
}

// startChild starts cmd and waits until one line of its output (stdout,
// or stderr with fromStderr) gives its address, as listen (nil: none)
// extracts it, or, with health (host:port) given, until GET /healthz there
// answers 200;
// the rest of that output is drained so that the child never blocks on a
// full pipe. The child gets SIGKILL if the tool dies first (Pdeathsig),
// and kill ends it otherwise.
func startChild(ctx context.Context, name string, cmd *exec.Cmd, fromStderr bool, listen func(line string) (string, bool), health string) (*child, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var (
		pipe io.ReadCloser
		err  error
	)
	c := &child{name: name, cmd: cmd, exited: make(chan struct{}), tail: &tail{}}
	if fromStderr {
		pipe, err = cmd.StderrPipe()
	} else {
		pipe, err = cmd.StdoutPipe()
		cmd.Stderr = c.tail
	}
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("load: start %s: %w", name, err)
	}
	addr := make(chan string, 1)
	healthy := make(chan string, 1)
	if health != "" {
		go pollHealth(ctx, health, c.exited, healthy)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			line := sc.Text()
			c.tail.Write([]byte(line + "\n"))
			if listen == nil {
				continue
			}
			if a, ok := listen(line); ok && !found {
				found = true
				addr <- a
			}
		}
		io.Copy(io.Discard, pipe) // a line past the scanner's bound
		_ = cmd.Wait()
		close(c.exited)
	}()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case c.addr = <-addr:
		return c, nil
	case a := <-healthy:
		c.addr = a
		return c, nil
	case <-c.exited:
		return nil, fmt.Errorf("load: %s exited before it listened: %v\n%s", name, cmd.ProcessState, c.tail)
	case <-timer.C:
		c.kill()
		return nil, fmt.Errorf("load: %s did not listen within %s\n%s", name, readyTimeout, c.tail)
	case <-ctx.Done():
		c.kill()
		return nil, ctx.Err()
	}
}

// pollHealth asks addr's /healthz every pollEvery until it answers 200,
// then sends addr on ok; it stops when exited is closed or ctx is done.
// It serves a child whose log does not say where it listens
// (toolguard-proxy at -log-level warn): its address is chosen by freePort.
func pollHealth(ctx context.Context, addr string, exited <-chan struct{}, ok chan<- string) {
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if resp, err := client.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ok <- addr
				return
			}
		}
		select {
		case <-tick.C:
		case <-exited:
			return
		case <-ctx.Done():
			return
		}
	}
}

// pollEvery is how often pollHealth asks.
const pollEvery = 10 * time.Millisecond

// freePort returns a loopback address no one listened on a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// kill ends the child and waits until it is reaped.
func (c *child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.exited
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// listeningLine reads the roles' "listening ADDR".
func listeningLine(line string) (string, bool) {
	return strings.CutPrefix(line, "listening ")
}

// tail keeps the last tailLines lines written to it.
type tail struct {
	mu    sync.Mutex
	lines []string
	part  string
}

const tailLines = 20

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.part + string(p)
	parts := strings.Split(s, "\n")
	t.part = parts[len(parts)-1]
	if len(t.part) > 4096 {
		t.part = t.part[:4096]
	}
	for _, l := range parts[:len(parts)-1] {
		if len(l) > 4096 {
			l = l[:4096] + "…"
		}
		t.lines = append(t.lines, l)
	}
	if n := len(t.lines); n > tailLines {
		t.lines = append(t.lines[:0], t.lines[n-tailLines:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(append(t.lines, t.part), "\n")
}

// cpuTicks returns the user and system CPU time pid has used, in clock
// ticks: fields 14 and 15 of /proc/<pid>/stat.
func cpuTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("load: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("load: /proc/%d/stat: %d fields after the name, want at least 13", pid, len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("load: /proc/%d/stat: %w", pid, err)
	}
	return utime + stime, nil
}

// rssKiB returns pid's resident set (VmRSS of /proc/<pid>/status) in KiB.
func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("load: /proc/%d/status has no VmRSS", pid)
}

// clockTicks is the kernel's USER_HZ (getconf CLK_TCK), the unit of
// /proc/<pid>/stat's times; 100 where getconf cannot say, as on every
// Linux architecture Go runs on.
func clockTicks() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n > 0 {
			return float64(n)
		}
	}
	return 100
}
