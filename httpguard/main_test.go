package httpguard

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/wire")

// wireDir holds the exchanges recorded with the real SDKs (httpguard/sdktest
// records them) and the golden outputs of this package's functions, which
// httpguard/sdktest feeds back to the SDKs.
const wireDir = "../testdata/wire"

func fixture(t *testing.T, proto, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wireDir, proto, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with the golden file, or rewrites it with -update.
func golden(t *testing.T, proto, name string, got []byte) {
	t.Helper()
	path := filepath.Join(wireDir, proto, name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./httpguard -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got\n%s\nwant\n%s\n(run go test ./httpguard -update if the change is meant)", path, got, want)
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// decode unmarshals b or fails the test.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, b)
	}
	return m
}
