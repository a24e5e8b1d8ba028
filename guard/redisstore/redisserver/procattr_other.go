//go:build !linux

package redisserver

import "syscall"

// sysProcAttr: elsewhere the server is stopped by Stop only.
func sysProcAttr() *syscall.SysProcAttr { return nil }
