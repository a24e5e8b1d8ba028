//go:build linux

// Command load measures what toolguard-proxy costs beside a plain
// reverse proxy, each server in a process of its own on loopback: a fake
// OpenAI Chat Completions upstream answering from testdata/wire/openai-chat
// (a valid tool call, sync or streamed), a plain httputil.ReverseProxy to
// it, and toolguard-proxy to it with its defaults (ToolArgValidation,
// -log-level info, metrics). Clients send a bounded number of requests
// through each proxy, sync then streamed, in rounds that alternate the
// proxies, and the tool prints, per proxy and mode, the medians over the
// rounds of the requests per second the clients saw and of the proxy
// process's CPU per request, read from /proc/<pid>/stat (user + system
// time over a round's requests, divided by their count) and of the bytes
// it allocated per request (go_memstats_alloc_bytes_total on
// toolguard-proxy's /metrics, the same runtime figure on the plain
// proxy's); then what one
// stream held in flight costs each proxy (the rise of its VmRSS and of
// its goroutines with -streams streams held at the upstream); then the
// machine's load average, since every process shares its cores.
//
//	cd bench && go run ./load [-c 64] [-n 10000] [-rounds 3] [-warmup 2000] [-streams 256]
//	                          [-proxy-bin PATH] [-proxy-args '-log-level warn'] [-cpuprofile FILE]
//
// Without -proxy-bin it builds cmd/toolguard-proxy of the repository it
// runs in into a temporary directory. With -cpuprofile FILE (cpu.pprof)
// it writes the CPU profile of toolguard-proxy's process over each mode's
// measured rounds to FILE with the mode before its extension
// (cpu-sync.pprof, cpu-stream.pprof), for go tool pprof; the proxy is
// then built with the toolguard_loadprofile tag, which serves the profile
// on a loopback port of its own (a -proxy-bin must be built so too). Every child is killed when the tool
// exits, on an error or an interrupt too (and by the kernel if the tool
// itself is killed). Linux only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
)

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		if err := runRole(role); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// options are the flags.
type options struct {
	c, n, rounds, warmup, streams int
	repo                          string
	proxyBin                      string
	proxyArgs                     string
	cpuprofile                    string
}

// proxy is one of the two proxies under load.
type proxy struct {
	name  string // "plain" or "guarded"
	child *child
	stats func(context.Context) (runtimeStats, error)
}

// row is one line of the table.
type row struct {
	proxy, mode string
	c, n        int
	reqPerSec   float64
	cpuMicros   float64 // per request
	allocKiB    float64 // allocated per request
}

// run is the command: it parses args, starts the three servers, drives
// the load, prints the tables on stdout and kills the servers.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	var o options
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.c, "c", 64, "concurrent clients")
	fs.IntVar(&o.n, "n", 10000, "measured requests per proxy, mode and round")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds per mode, each through both proxies in turn; the table has their medians")
	fs.IntVar(&o.warmup, "warmup", 2000, "requests per proxy and mode sent before the measured ones")
	fs.IntVar(&o.streams, "streams", 256, "streams held in flight at once to read what one costs (0: skip)")
	fs.StringVar(&o.repo, "repo", "", "the toolguard repository (default: the one holding the working directory)")
	fs.StringVar(&o.proxyBin, "proxy-bin", "", "a built toolguard-proxy (default: go build of the repository's cmd/toolguard-proxy)")
	fs.StringVar(&o.proxyArgs, "proxy-args", "", "more flags for toolguard-proxy, space-separated")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write toolguard-proxy's CPU profile over each mode's measured rounds to this `file`, the mode before its extension")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("load: unexpected arguments %q", fs.Args())
	}
	if o.c < 1 || o.n < 1 || o.rounds < 1 || o.warmup < 0 || o.streams < 0 {
		return fmt.Errorf("load: -c %d -n %d -rounds %d -warmup %d -streams %d: want c, n and rounds at least 1, warmup and streams at least 0",
			o.c, o.n, o.rounds, o.warmup, o.streams)
	}
	repo, err := findRepo(o.repo)
	if err != nil {
		return err
	}
	wire := filepath.Join(repo, "testdata", "wire", "openai-chat")
	syncBody, err := os.ReadFile(filepath.Join(wire, "request.json"))
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	streamBody, err := os.ReadFile(filepath.Join(wire, "stream-request.json"))
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	bin := o.proxyBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "toolguard-load")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "toolguard-proxy")
		args := []string{"build", "-o", bin}
		if o.cpuprofile != "" {
			args = append(args, "-tags", profileTag)
		}
		build := exec.CommandContext(ctx, "go", append(args, "./cmd/toolguard-proxy")...)
		build.Dir = repo
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("load: go build ./cmd/toolguard-proxy: %w\n%s", err, out)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}

	var children []*child
	defer func() {
		for _, c := range children {
			c.kill()
			if err != nil {
				// What the servers said last, to tell why.
				err = fmt.Errorf("%w\n\n%s's last lines:\n%s", err, c.name, c.tail)
			}
		}
	}()
	start := func(name string, cmd *exec.Cmd, fromStderr bool, listen func(string) (string, bool), health string) (*child, error) {
		c, err := startChild(ctx, name, cmd, fromStderr, listen, health)
		if err == nil {
			children = append(children, c)
		}
		return c, err
	}
	roleCmd := func(role string, env ...string) *exec.Cmd {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), append([]string{roleEnv + "=" + role}, env...)...)
		return cmd
	}
	up, err := start("the fake upstream", roleCmd("upstream", wireEnv+"="+wire), false, listeningLine, "")
	if err != nil {
		return err
	}
	upURL := "http://" + up.addr
	plainChild, err := start("the plain proxy", roleCmd("plain", upstreamEnv+"="+upURL), false, listeningLine, "")
	if err != nil {
		return err
	}
	// The address is chosen here: at -log-level warn the proxy does not
	// log where it listens, and its /healthz says when it is ready.
	proxyAddr, err := freePort()
	if err != nil {
		return err
	}
	proxyArgs := append([]string{"-listen", proxyAddr, "-upstream", upURL}, strings.Fields(o.proxyArgs)...)
	pcmd := exec.Command(bin, proxyArgs...)
	// No traces exported: the proxy's defaults without an OTLP endpoint.
	pcmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
	var prof *profiler
	if o.cpuprofile != "" {
		paddr, err := freePort()
		if err != nil {
			return err
		}
		pcmd.Env = append(pcmd.Env, profileEnv+"="+paddr)
		prof = &profiler{client: http.DefaultClient, url: "http://" + paddr}
	}
	guardedChild, err := start("toolguard-proxy", pcmd, true, nil, proxyAddr)
	if err != nil {
		return err
	}

	client := &http.Client{Transport: &http.Transport{
		MaxIdleConns:        2 * (o.c + o.streams),
		MaxIdleConnsPerHost: o.c + o.streams,
	}}
	defer client.CloseIdleConnections()
	proxies := []proxy{
		{name: "plain", child: plainChild, stats: statsAt(client, "http://"+plainChild.addr+statsPath)},
		{name: "guarded", child: guardedChild, stats: statsAt(client, "http://"+guardedChild.addr+"/metrics")},
	}

	// What a stream in flight costs, first, on processes that have served
	// one request of each kind and nothing more, so that the rise is not
	// hidden in a heap the load grew.
	helds := make([]held, len(proxies))
	if o.streams > 0 {
		for i, p := range proxies {
			url := "http://" + p.child.addr + "/v1/chat/completions"
			for _, stream := range []bool{false, true} {
				b := syncBody
				if stream {
					b = streamBody
				}
				if _, err := drive(ctx, client, url, b, stream, 1, 1); err != nil {
					return fmt.Errorf("load: %s: warm-up: %w", p.name, err)
				}
			}
			if helds[i], err = holdStreams(ctx, client, url, streamBody, o.streams, p.child.pid(), p.stats, upURL+releasePath); err != nil {
				return fmt.Errorf("load: %s: streams in flight: %w", p.name, err)
			}
		}
	}

	ticks := clockTicks()
	var rows []row
	for _, mode := range []string{"sync", "stream"} {
		body, stream := syncBody, mode == "stream"
		if stream {
			body = streamBody
		}
		for _, p := range proxies {
			if o.warmup > 0 {
				url := "http://" + p.child.addr + "/v1/chat/completions"
				if _, err := drive(ctx, client, url, body, stream, o.c, o.warmup); err != nil {
					return fmt.Errorf("load: %s %s: warm-up: %w", p.name, mode, err)
				}
			}
		}
		// The rounds alternate the proxies, so that a burst of other
		// work on the machine falls on both.
		cpu := make([][]float64, len(proxies))
		rps := make([][]float64, len(proxies))
		alloc := make([][]float64, len(proxies))
		if prof != nil {
			if err := prof.start(ctx); err != nil {
				return err
			}
		}
		for range o.rounds {
			for i, p := range proxies {
				url := "http://" + p.child.addr + "/v1/chat/completions"
				st0, err := p.stats(ctx)
				if err != nil {
					return err
				}
				cpu0, err := cpuTicks(p.child.pid())
				if err != nil {
					return err
				}
				elapsed, err := drive(ctx, client, url, body, stream, o.c, o.n)
				if err != nil {
					return fmt.Errorf("load: %s %s: %w", p.name, mode, err)
				}
				cpu1, err := cpuTicks(p.child.pid())
				if err != nil {
					return err
				}
				st1, err := p.stats(ctx)
				if err != nil {
					return err
				}
				cpu[i] = append(cpu[i], float64(cpu1-cpu0)/ticks*1e6/float64(o.n))
				alloc[i] = append(alloc[i], (st1.allocated-st0.allocated)/1024/float64(o.n))
				rps[i] = append(rps[i], float64(o.n)/elapsed.Seconds())
			}
		}
		if prof != nil {
			if err := prof.stop(ctx, profileFile(o.cpuprofile, mode)); err != nil {
				return err
			}
		}
		for i, p := range proxies {
			rows = append(rows, row{proxy: p.name, mode: mode, c: o.c, n: o.n * o.rounds, reqPerSec: median(rps[i]), cpuMicros: median(cpu[i]), allocKiB: median(alloc[i])})
		}
	}

	fmt.Fprintf(stdout, "toolguard-proxy -upstream <fake>%s; %d CPUs; %s; req/s, CPU and allocations: medians of %d rounds of %d requests\n\n",
		strings.TrimRight(" "+o.proxyArgs, " "), runtime.NumCPU(), runtime.Version(), o.rounds, o.n)
	printRows(stdout, rows)
	if o.streams > 0 {
		fmt.Fprintln(stdout)
		printHeld(stdout, proxies, helds)
	}
	fmt.Fprintf(stdout, "\n%s\n", loadAverage())
	return nil
}

// median returns the middle of xs (the mean of the two middle ones for an
// even count); xs is sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// printRows writes the CPU table; the ratio is the guarded row's CPU over
// the plain row's of the same mode.
func printRows(w io.Writer, rows []row) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "proxy\tmode\tc\trequests\treq/s\tCPU µs/request\tguarded ÷ plain\tKiB allocated/request\t")
	plain := map[string]float64{}
	for _, r := range rows {
		ratio := ""
		if r.proxy == "plain" {
			plain[r.mode] = r.cpuMicros
		} else if p := plain[r.mode]; p > 0 {
			ratio = fmt.Sprintf("%.2f", r.cpuMicros/p)
		} else {
			ratio = "n/a" // the plain proxy used less than a clock tick
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%.1f\t%s\t%.1f\t\n", r.proxy, r.mode, r.c, r.n, r.reqPerSec, r.cpuMicros, ratio, r.allocKiB)
	}
	tw.Flush()
	trimmed(w, &b)
}

// printHeld writes the table of streams in flight.
func printHeld(w io.Writer, proxies []proxy, helds []held) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "proxy\tstreams in flight\tVmRSS KiB/stream\tgoroutines/stream\tKiB guarded ÷ plain\t")
	for i, p := range proxies {
		ratio := ""
		switch {
		case i == 0:
		case helds[0].kibPerStream > 0:
			ratio = fmt.Sprintf("%.2f", helds[i].kibPerStream/helds[0].kibPerStream)
		default:
			ratio = "n/a" // the plain proxy's VmRSS did not rise
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%s\t\n", p.name, helds[i].streams, helds[i].kibPerStream, helds[i].gorsPerStream, ratio)
	}
	tw.Flush()
	trimmed(w, &b)
}

// trimmed writes what tabwriter wrote to b to w, without the spaces a
// right-aligned table leaves at the end of a line.
func trimmed(w io.Writer, b *strings.Builder) {
	for line := range strings.Lines(b.String()) {
		io.WriteString(w, strings.TrimRight(line, " \n")+"\n")
	}
}

// loadAverage is uptime's line, or /proc/loadavg's where uptime is
// missing.
func loadAverage() string {
	if out, err := exec.Command("uptime").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average: unknown (" + err.Error() + ")"
	}
	return "load average (/proc/loadavg): " + strings.TrimSpace(string(b))
}

// findRepo returns dir, or the nearest directory at or above the working
// directory whose go.mod is toolguard's.
func findRepo(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/toolguard/toolguard\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("load: no toolguard repository at or above %s: give -repo", wd)
		}
	}
}
