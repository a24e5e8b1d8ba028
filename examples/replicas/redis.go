package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// errNoRedis reports that redis-server is not on the PATH.
var errNoRedis = errors.New("redis-server not found on the PATH")

// startRedis starts a throwaway redis-server on a free loopback port, with
// persistence off and its files in dir, and returns its address and a
// function that stops it. It is a dozen lines of the example so that the
// example can be copied out of this repository as it is.
func startRedis(ctx context.Context, dir string) (addr string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, errNoRedis
	}
	l, err := net.Listen("tcp", "127.0.0.1:0") // find a free port
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// Wait until it answers.
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := c.Ping(ctx).Err(); err == nil {
			return addr, stop, nil
		} else if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not start: %w", addr, err)
		}
	}
}
