//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own, so that a
// terminal's Ctrl-C, sent to the wrapper's group, reaches the server once:
// forwarded by the wrapper (signalServer), not also from the terminal.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalServer sends sig to the server's process group, as a terminal
// would have: the server and what it started (npx's node, a shell's
// command) get it.
func signalServer(cmd *exec.Cmd, sig os.Signal) error {
	if s, ok := sig.(syscall.Signal); ok {
		return syscall.Kill(-cmd.Process.Pid, s)
	}
	return cmd.Process.Signal(sig)
}
