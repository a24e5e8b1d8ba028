//go:build unix

package mcptool_test

import (
	"os/exec"
	"syscall"
)

// npx runs the server as a grandchild (npx -> sh -> node), and some servers
// do not exit when their stdin closes. Starting the command in a process
// group of its own lets the test stop the whole tree.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalProcessGroup sends sig to the command's process group, if it started.
func signalProcessGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig) // ESRCH: already gone
	}
}

// terminate asks every process of the server to exit.
func terminate(cmd *exec.Cmd) { signalProcessGroup(cmd, syscall.SIGTERM) }

// sweep kills whatever is left of the server.
func sweep(cmd *exec.Cmd) { signalProcessGroup(cmd, syscall.SIGKILL) }
