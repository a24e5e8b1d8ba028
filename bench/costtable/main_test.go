package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	in := `goos: linux
BenchmarkSideBySide/decode-2         	  947474	      2000 ns/op	     636 B/op	      14 allocs/op
BenchmarkSideBySide/decode-2         	  698244	      1000 ns/op	     636 B/op	      14 allocs/op
BenchmarkSideBySide/decode-2         	  891048	      3000 ns/op	     636 B/op	      14 allocs/op
BenchmarkSideBySide/toolguard-2      	 1345107	       500.0 ns/op	    1897 B/op	       1 allocs/op
PASS
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := "| decode + validate one valid BFCL call | time (median) | × decode | memory |\n" +
		"|---|--:|--:|--:|\n" +
		"| `encoding/json` decode into `map[string]any`, no validation (the floor) | 2.00 µs | 1.00 | 636 B, 14 allocs |\n" +
		"| toolguard `ValidateJSON` | 0.50 µs | 0.25 | 1,897 B, 1 allocs |\n"
	if out.String() != want {
		t.Errorf("run() wrote\n%s\nwant\n%s", out.String(), want)
	}
	if err := run(strings.NewReader("PASS\n"), &out); err == nil {
		t.Error("run(no results) = nil, want an error")
	}
}
