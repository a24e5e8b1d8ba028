//go:build unix

package redisserver

import (
	"errors"
	"syscall"
)

// Freeze stops the server's process with SIGSTOP: it keeps its port and its
// connections but answers nothing, as a hung server does, until [Server.Thaw].
func (s *Server) Freeze() error { return s.signal(syscall.SIGSTOP) }

// Thaw resumes a server stopped by [Server.Freeze] with SIGCONT.
func (s *Server) Thaw() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("redisserver: not running")
	}
	return s.cmd.Process.Signal(sig)
}
