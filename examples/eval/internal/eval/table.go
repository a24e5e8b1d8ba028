package eval

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Markdown writes the report as Markdown: one table for all corrupted
// calls, then one per corruption kind, each with a row per configuration.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s unique BFCL calls (schema, arguments), corrupted with seed %d; "+
		"model: eval.SelfCorrecting; max_retries = %d.\n", thousands(r.Cases), r.Seed, MaxRetries)
	if len(r.Configs) > 0 {
		fmt.Fprintf(&b, "Model calls saved: how many fewer model calls a configuration made than the first, %s, on the same calls.\n", r.Configs[0])
	}

	all := make([]Stats, len(r.Configs))
	for i := range r.Configs {
		all[i] = r.Overall(i)
	}
	fmt.Fprintf(&b, "\n#### All corrupted calls (%s)\n\n", thousands(all[0].Calls))
	r.table(&b, all)
	fmt.Fprintf(&b, "\n#### Each of the %d kinds weighted equally (the mean of the per-kind rows below)\n\n", len(r.Kinds))
	r.kindMeanTable(&b)
	for _, k := range r.Kinds {
		fmt.Fprintf(&b, "\n#### %s (%s calls", k.Kind, thousands(k.Applicable))
		if k.Skipped > 0 {
			fmt.Fprintf(&b, "; %s not applicable", thousands(k.Skipped))
		}
		b.WriteString(")\n\n")
		r.table(&b, k.ByConfig)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

const tableHead = "| configuration | calls ending valid | model calls per call | fixed with no model call | model calls saved | feedback bytes (median / p95) |\n" +
	"|---|--:|--:|--:|--:|--:|\n"

func (r *Report) table(b *strings.Builder, stats []Stats) {
	b.WriteString(tableHead)
	for i, name := range r.Configs {
		s := stats[i]
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", name,
			percent(s.Valid, s.Calls), mean(s.ModelCalls, s.Calls), percent(s.NoCall, s.Calls),
			saved(stats[0].ModelCalls-s.ModelCalls, s.Calls), bytesCell(s.Feedback))
	}
}

// saved renders n model calls saved: "–" for none made, "1,234", "-56".
func saved(n, calls int) string {
	if calls == 0 {
		return "–"
	}
	if n < 0 {
		return "-" + thousands(-n)
	}
	return thousands(n)
}

// kindMeanTable writes the unweighted mean over kinds of each rate; kinds
// that applied to no call are left out. Calls saved and feedback sizes are
// not averaged.
func (r *Report) kindMeanTable(b *strings.Builder) {
	b.WriteString(tableHead)
	for i, name := range r.Configs {
		var valid, calls, noCall float64
		n := 0
		for _, k := range r.Kinds {
			s := k.ByConfig[i]
			if s.Calls == 0 {
				continue
			}
			n++
			valid += float64(s.Valid) / float64(s.Calls)
			calls += float64(s.ModelCalls) / float64(s.Calls)
			noCall += float64(s.NoCall) / float64(s.Calls)
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(b, "| %s | %s%% | %s | %s%% | – | – |\n", name,
			strconv.FormatFloat(100*valid/float64(n), 'f', 1, 64),
			strconv.FormatFloat(calls/float64(n), 'f', 2, 64),
			strconv.FormatFloat(100*noCall/float64(n), 'f', 1, 64))
	}
}

func percent(n, of int) string {
	if of == 0 {
		return "–"
	}
	return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64) + "%"
}

func mean(n, of int) string {
	if of == 0 {
		return "–"
	}
	return strconv.FormatFloat(float64(n)/float64(of), 'f', 2, 64)
}

// bytesCell renders the median and 95th percentile (nearest rank) of sorted.
func bytesCell(sorted []int) string {
	if len(sorted) == 0 {
		return "–"
	}
	return strconv.Itoa(Percentile(sorted, 50)) + " / " + strconv.Itoa(Percentile(sorted, 95))
}

// Percentile returns the p-th percentile (nearest rank) of sorted values.
func Percentile(sorted []int, p int) int {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
