//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxAnswer bounds what the generator reads of one answer.
const maxAnswer = 1 << 20

// drive sends n requests with body to url from c clients at once, each
// sending its next request when its last answer is read whole, and
// checks every answer (status 200, a valid call of get_weather, a stream
// to its [DONE]). It returns how long the n requests took, or the first
// error, which stops the others.
func drive(ctx context.Context, client *http.Client, url string, body []byte, stream bool, c, n int) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				if err := send(ctx, client, url, body, stream); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return elapsed, nil
}

// send makes one request and checks its answer.
func send(ctx context.Context, client *http.Client, url string, body []byte, stream bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-load-test")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("load: %s answered %s: %.300s", url, resp.Status, answer)
	}
	if stream {
		return checkStream(answer)
	}
	return checkSync(answer)
}

// checkSync checks that answer is a chat completion with a call of
// get_weather whose arguments are a JSON object.
func checkSync(answer []byte) error {
	var a struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return fmt.Errorf("load: the answer is not JSON: %w: %.300s", err, answer)
	}
	if len(a.Choices) == 0 || len(a.Choices[0].Message.ToolCalls) == 0 {
		return fmt.Errorf("load: the answer has no tool call: %.300s", answer)
	}
	return checkCall(a.Choices[0].Message.ToolCalls[0].Function.Name, a.Choices[0].Message.ToolCalls[0].Function.Arguments)
}

// checkStream checks that answer is a chat completion stream that ends
// in [DONE] and whose chunks carry a call of get_weather.
func checkStream(answer []byte) error {
	if !bytes.HasSuffix(answer, []byte("data: [DONE]\n\n")) {
		return fmt.Errorf("load: the stream does not end in [DONE]: %.300s", lastBytes(answer, 300))
	}
	var name, args string
	for _, line := range strings.Split(string(answer), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    int
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return fmt.Errorf("load: a chunk is not JSON: %w: %.300s", err, data)
		}
		for _, ch := range chunk.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == 0 {
					name += tc.Function.Name
					args += tc.Function.Arguments
				}
			}
		}
	}
	return checkCall(name, args)
}

func checkCall(name, args string) error {
	var obj map[string]any
	if name != "get_weather" || json.Unmarshal([]byte(args), &obj) != nil {
		return fmt.Errorf("load: the first tool call is %q(%s), want get_weather with a JSON object", name, args)
	}
	return nil
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// held is what s streams held in flight at once cost a proxy: the rise
// of its resident set and of its goroutines, each divided by s.
type held struct {
	streams       int
	kibPerStream  float64
	gorsPerStream float64
}

// holdStreams opens s streams through the proxy at url, each held by the
// upstream after its first text chunk; once every client has read that
// chunk it reads the proxy's VmRSS and goroutines (stats), then
// releases the upstream (release: its URL) and reads every stream to
// its end. What a stream costs is the rise of VmRSS over s: the garbage
// the process holds when the streams open (the stats' own) may be
// reused by them, so s is large (the tool's 256), and a fixed cost
// small beside what s streams take.
func holdStreams(ctx context.Context, client *http.Client, url string, body []byte, s, pid int, stats func(context.Context) (runtimeStats, error), release string) (held, error) {
	// The proxy's stats first: reading them allocates (toolguard-proxy's
	// /metrics about 1.6 MiB, its OpenTelemetry exporter's), which is not
	// what the streams cost.
	st0, err := stats(ctx)
	if err != nil {
		return held{}, err
	}
	rss0, err := rssKiB(pid)
	if err != nil {
		return held{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		started, done sync.WaitGroup
		all           = make(chan struct{})
	)
	for range s {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			first := sync.OnceFunc(started.Done)
			defer first()
			err := func() error {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
				if err != nil {
					return err
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set(holdHeader, "1")
				resp, err := client.Do(req)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("load: a held stream was answered %s", resp.Status)
				}
				br := bufio.NewReader(io.LimitReader(resp.Body, maxAnswer))
				// The first text chunk has reached the client once its
				// line has: the stream is in flight at the proxy.
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return fmt.Errorf("load: a held stream ended before its first text: %w", err)
					}
					if strings.Contains(line, `"content":"Let m"`) {
						break
					}
				}
				first()
				rest, err := io.ReadAll(br)
				if err != nil {
					return err
				}
				if !bytes.HasSuffix(rest, []byte("data: [DONE]\n\n")) {
					return errors.New("load: a held stream did not end in [DONE]")
				}
				return nil
			}()
			if err != nil {
				cancel(err)
			}
		}()
	}
	go func() { started.Wait(); close(all) }()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-all:
	case <-timer.C:
		cancel(fmt.Errorf("load: %d streams were not all in flight within %s", s, readyTimeout))
	}
	var h held
	if err := context.Cause(ctx); err == nil {
		rss1, err1 := rssKiB(pid)
		st1, err2 := stats(ctx)
		if err := errors.Join(err1, err2); err != nil {
			cancel(err)
		} else {
			h = held{streams: s, kibPerStream: float64(rss1-rss0) / float64(s), gorsPerStream: float64(st1.goroutines-st0.goroutines) / float64(s)}
		}
	}
	if err := post(client, release); err != nil {
		cancel(err)
	}
	done.Wait()
	if err := context.Cause(ctx); err != nil {
		return held{}, err
	}
	return h, nil
}

// post sends an empty POST to url and checks for 200.
func post(client *http.Client, url string) error {
	resp, err := client.Post(url, "text/plain", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("load: POST %s: %s", url, resp.Status)
	}
	return nil
}

// runtimeStats is what a proxy's Go runtime says of itself.
type runtimeStats struct {
	goroutines int
	allocated  float64 // bytes allocated since the process started
}

// statsAt reads url, in Prometheus's text format: the plain proxy's
// statsPath or toolguard-proxy's /metrics.
func statsAt(client *http.Client, url string) func(context.Context) (runtimeStats, error) {
	return func(ctx context.Context) (runtimeStats, error) {
		b, err := get(ctx, client, url)
		if err != nil {
			return runtimeStats{}, err
		}
		var (
			st        runtimeStats
			seen      int
			parseErrs []error
		)
		for _, line := range strings.Split(string(b), "\n") {
			name, v, ok := strings.Cut(line, " ")
			if !ok || (name != "go_goroutines" && name != "go_memstats_alloc_bytes_total") {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				parseErrs = append(parseErrs, fmt.Errorf("load: %s: %s: %w", url, name, err))
				continue
			}
			seen++
			if name == "go_goroutines" {
				st.goroutines = int(f)
			} else {
				st.allocated = f
			}
		}
		if err := errors.Join(parseErrs...); err != nil {
			return runtimeStats{}, err
		}
		if seen != 2 {
			return runtimeStats{}, fmt.Errorf("load: %s has not both go_goroutines and go_memstats_alloc_bytes_total", url)
		}
		return st, nil
	}
}

func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("load: GET %s: %s", url, resp.Status)
	}
	return b, nil
}
