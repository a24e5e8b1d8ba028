// Command eval measures the model calls toolguard saves on real tool calls.
//
// It takes the unique ground-truth calls of the Berkeley Function Calling
// Leaderboard (BFCL; the subset shipped with the module in
// corpus/testdata, or a full corpus with -corpus), corrupts each in the ways models get
// tool calls wrong, and sends every corrupted call through
// ToolArgValidation in several configurations, with a simulated model that
// fixes exactly what the feedback points at (eval.SelfCorrecting). It
// prints one Markdown table for all corrupted calls and one per kind of
// corruption. The output is deterministic: the corruptions are drawn from a
// fixed seed.
//
//	go run ./examples/eval
//	go run ./examples/eval -corpus ../shared/corpus/bfcl -seed 7 -sample 500
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/toolguard/toolguard/corpus"
	"github.com/toolguard/toolguard/examples/eval/internal/eval"
)

// DefaultSeed is the seed of the published table.
const DefaultSeed = 20260921

func main() {
	corpus := flag.String("corpus", "", "directory holding BFCL's tools.jsonl and calls.jsonl (default: the subset shipped with the module)")
	seed := flag.Uint64("seed", DefaultSeed, "seed of the corruptions")
	sample := flag.Int("sample", 0, "use only the first n unique calls (0: all)")
	flag.Parse()
	start := time.Now()
	if err := run(context.Background(), os.Stdout, *corpus, *seed, *sample); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "eval: done in %v\n", time.Since(start).Round(time.Millisecond))
}

// run prints the tables for the BFCL calls in dir ("": the shipped subset).
func run(ctx context.Context, w io.Writer, dir string, seed uint64, sample int) error {
	data, err := corpus.Shipped(corpus.BFCL)
	if dir != "" {
		data, err = corpus.FromDir(dir)
	}
	if err != nil {
		return err
	}
	cases, err := eval.LoadFS(data)
	if err != nil {
		return err
	}
	if sample > 0 && sample < len(cases) {
		cases = cases[:sample]
	}
	report, err := eval.Run(ctx, cases, eval.Options{Seed: seed})
	if err != nil {
		return err
	}
	if err := report.Markdown(w); err != nil {
		return err
	}
	return runOutput(ctx, w, cases, seed) // structured output (output.go)
}
