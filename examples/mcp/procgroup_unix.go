//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd in a process group of its own, so that the
// server npx runs as a grandchild can be stopped with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func signalProcessGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig) // ESRCH: already gone
	}
}

// terminate asks every process of the server to exit.
func terminate(cmd *exec.Cmd) { signalProcessGroup(cmd, syscall.SIGTERM) }

// sweep kills whatever is left of the server.
func sweep(cmd *exec.Cmd) { signalProcessGroup(cmd, syscall.SIGKILL) }
