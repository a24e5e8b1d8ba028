//go:build !linux

// Command load measures toolguard-proxy against a plain reverse proxy; it
// reads /proc, so it runs on Linux only.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "load: reads /proc: Linux only")
	os.Exit(1)
}
