package main

import (
	"context"
	"io"

	"github.com/toolguard/toolguard/examples/eval/internal/eval"
)

// runOutput prints the structured-output table: the same corruptions as
// final answers, through the agent's answer tool and OutputValidation.
func runOutput(ctx context.Context, w io.Writer, cases []eval.Case, seed uint64) error {
	report, err := eval.RunOutput(ctx, cases, eval.Options{Seed: seed})
	if err != nil {
		return err
	}
	return report.Markdown(w)
}
