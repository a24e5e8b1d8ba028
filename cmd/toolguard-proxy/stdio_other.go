//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// ownProcessGroup leaves cmd in the wrapper's process group where process
// groups are not Unix's.
func ownProcessGroup(*exec.Cmd) {}

// signalServer sends sig to the server.
func signalServer(cmd *exec.Cmd, sig os.Signal) error {
	return cmd.Process.Signal(sig)
}
