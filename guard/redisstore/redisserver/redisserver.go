// Package redisserver starts a throwaway redis-server for tests and
// examples: on a free loopback port, persistence off, its files in a
// temporary directory, stopped (and restartable on the same port) on
// demand.
package redisserver

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Binary is the name of the program looked up on the PATH.
const Binary = "redis-server"

// ErrNotFound reports that redis-server is not on the PATH.
var ErrNotFound = errors.New("redisserver: " + Binary + " not found on the PATH (Debian: apt-get install redis-server)")

// Server is a running (or stopped) redis-server. Its methods are safe for
// concurrent use.
type Server struct {
	bin, dir string
	port     int
	args     []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	drained chan struct{} // closed when the output reader has finished
}

// Start starts redis-server on a free loopback port. dir holds its working
// files (nothing is persisted); the caller removes it. args are passed on
// ("--cluster-enabled", "yes", say).
func Start(dir string, args ...string) (*Server, error) {
	bin, err := exec.LookPath(Binary)
	if err != nil {
		return nil, ErrNotFound
	}
	s := &Server{bin: bin, dir: dir, args: args}
	// A port found free may be taken before redis binds it; try a few.
	for range 5 {
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the server's port.
func (s *Server) Port() int { return s.port }

// Restart starts the server again on the same port, empty, after [Server.Stop].
func (s *Server) Restart() error { return s.start() }

// Stop kills the server and waits for it to exit. Stopping a stopped
// server does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait() // killed: the exit status says so
	<-s.drained
	s.cmd = nil
	return nil
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("redisserver: already running")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("redisserver: %w", err)
	}
	args := append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--daemonize", "no", "--loglevel", "notice",
	}, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	w.Close() // the child holds its own copy: EOF when it exits
	if err != nil {
		r.Close()
		return fmt.Errorf("redisserver: start %s: %w", s.bin, err)
	}
	ready := make(chan error, 1)
	drained := make(chan struct{})
	go func(tell chan<- error) {
		defer close(drained)
		defer r.Close()
		sc := bufio.NewScanner(r)
		var tail []string
		for sc.Scan() {
			if tell == nil {
				continue // drain, so redis never blocks on a full pipe
			}
			line := sc.Text()
			if strings.Contains(line, "Ready to accept connections") {
				tell <- nil
				tell = nil
				continue
			}
			tail = append(tail[max(len(tail)-9, 0):], line)
		}
		if tell != nil {
			tell <- fmt.Errorf("redisserver: %s on port %d exited before it was ready:\n%s", s.bin, s.port, strings.Join(tail, "\n"))
		}
	}(ready)
	if err := <-ready; err != nil {
		_ = cmd.Wait()
		<-drained
		return err
	}
	s.cmd, s.drained = cmd, drained
	return nil
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisserver: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
