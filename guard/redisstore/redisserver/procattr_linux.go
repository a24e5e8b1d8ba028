package redisserver

import "syscall"

// sysProcAttr kills the server if the process that started it dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
