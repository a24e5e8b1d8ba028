package redisserver_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard/redisstore/redisserver"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ping sends PING over a raw connection and returns the reply line.
func ping(addr string) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

func TestStartStopRestart(t *testing.T) {
	s, err := redisserver.Start(t.TempDir())
	if errors.Is(err, redisserver.ErrNotFound) {
		if os.Getenv("TOOLGUARD_REQUIRE_REDIS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if got, err := ping(s.Addr()); got != "+PONG" {
		t.Fatalf("PING %s = %q, %v; want +PONG", s.Addr(), got, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := ping(s.Addr()); err == nil {
		t.Fatalf("PING %s after Stop succeeded, want a refused connection", s.Addr())
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got, err := ping(s.Addr()); got != "+PONG" {
		t.Fatalf("PING %s after Restart = %q, %v; want +PONG", s.Addr(), got, err)
	}
}
