// Command costtable turns the output of BenchmarkSideBySide (go test
// -bench SideBySide -benchmem -count N, on stdin) into the Markdown table
// of bench/README.md: per validator the median time, its ratio
// to decoding alone, and the memory per call.
//
//	go test -run '^$' -bench SideBySide -benchmem -count 3 | go run ./costtable
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
)

// line matches one benchmark result: name, ns/op, B/op, allocs/op.
var line = regexp.MustCompile(`^BenchmarkSideBySide/(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op\s+(\d+) B/op\s+(\d+) allocs/op`)

// label names a contender in the table; "" for a name it does not know.
func label(name string) string {
	switch name {
	case "decode":
		return "`encoding/json` decode into `map[string]any`, no validation (the floor)"
	case "toolguard":
		return "toolguard `ValidateJSON`"
	case "santhosh-tekuri-v5":
		return "santhosh-tekuri/jsonschema v5"
	case "santhosh-tekuri-v6":
		return "santhosh-tekuri/jsonschema v6"
	case "google-jsonschema-go":
		return "google/jsonschema-go"
	}
	return ""
}

type result struct {
	ns            []float64
	bytes, allocs int
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "costtable:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	results := map[string]*result{}
	var order []string
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		r := results[m[1]]
		if r == nil {
			r = &result{}
			results[m[1]] = r
			order = append(order, m[1])
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		r.ns = append(r.ns, ns)
		r.bytes, _ = strconv.Atoi(m[3])
		r.allocs, _ = strconv.Atoi(m[4])
	}
	if err := sc.Err(); err != nil {
		return err
	}
	floor, ok := results["decode"]
	if !ok {
		return fmt.Errorf("no BenchmarkSideBySide/decode result on stdin")
	}
	fmt.Fprintln(out, "| decode + validate one valid BFCL call | time (median) | × decode | memory |")
	fmt.Fprintln(out, "|---|--:|--:|--:|")
	for _, name := range order {
		r := results[name]
		text := label(name)
		if text == "" {
			text = name
		}
		fmt.Fprintf(out, "| %s | %s | %.2f | %s B, %d allocs |\n",
			text, micros(median(r.ns)), median(r.ns)/median(floor.ns), group(r.bytes), r.allocs)
	}
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func micros(ns float64) string {
	return strconv.FormatFloat(ns/1000, 'f', 2, 64) + " µs"
}

// group writes n with a comma between thousands.
func group(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
