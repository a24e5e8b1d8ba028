//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// profileTag is the build tag that makes toolguard-proxy serve its CPU
// profile on the address profileEnv names (cmd/toolguard-proxy's
// loadprofile.go); profileEnv must match that file's loadProfileEnv.
const (
	profileTag = "toolguard_loadprofile"
	profileEnv = "TOOLGUARD_LOAD_PROFILE_LISTEN"
)

// profiler starts and stops the CPU profile of a toolguard-proxy built
// with profileTag.
type profiler struct {
	client *http.Client
	url    string // http://host:port
}

// start begins a profile.
func (p *profiler) start(ctx context.Context) error {
	_, err := p.post(ctx, "/start")
	return err
}

// stop ends the profile and writes it to file.
func (p *profiler) stop(ctx context.Context, file string) error {
	b, err := p.post(ctx, "/stop")
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return fmt.Errorf("load: -cpuprofile: %w", err)
	}
	return nil
}

func (p *profiler) post(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("load: -cpuprofile: %w (is toolguard-proxy built with -tags %s?)", err, profileTag)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("load: -cpuprofile: %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("load: -cpuprofile: %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}

// profileFile is file with mode before its extension: cpu.pprof, sync →
// cpu-sync.pprof.
func profileFile(file, mode string) string {
	ext := filepath.Ext(file)
	return strings.TrimSuffix(file, ext) + "-" + mode + ext
}
