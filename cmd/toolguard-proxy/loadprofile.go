//go:build toolguard_loadprofile

package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
	"time"
)

// loadProfileEnv names the loopback address (host:port) on which a proxy
// built with the toolguard_loadprofile tag serves its CPU profile to the
// load tool (bench/load -cpuprofile): POST /start begins a profile, POST
// /stop ends it and answers it (pprof's format). The tag keeps this out
// of every other build: the proxy itself serves no profile.
const loadProfileEnv = "TOOLGUARD_LOAD_PROFILE_LISTEN"

func init() {
	addr := os.Getenv(loadProfileEnv)
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "toolguard-proxy: %s=%s: %v\n", loadProfileEnv, addr, err)
		os.Exit(2)
	}
	var (
		mu  sync.Mutex
		buf *bytes.Buffer // the profile being taken, or nil
	)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if buf != nil {
			http.Error(w, "a profile is already being taken", http.StatusConflict)
			return
		}
		b := &bytes.Buffer{}
		if err := pprof.StartCPUProfile(b); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		buf = b
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if buf == nil {
			http.Error(w, "no profile is being taken", http.StatusConflict)
			return
		}
		pprof.StopCPUProfile()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(buf.Bytes())
		buf = nil
	})
	go (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}
