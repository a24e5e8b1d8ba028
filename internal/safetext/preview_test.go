package safetext

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestPreviewOfHugeObject: previewing an object of 100,000 keys shows its
// smallest keys in order, as sorting them all would.
func TestPreviewOfHugeObject(t *testing.T) {
	t.Parallel()
	m := make(map[string]any, 100000)
	for i := range 100000 {
		m[fmt.Sprintf("k%05d", i)] = json.Number(fmt.Sprint(i))
	}
	got := Preview(m, 60)
	const want = `{"k00000":0,"k00001":1,"k00002":2,"k00003":3,"k00004":4,"k0"…`
	if got != want {
		t.Errorf("Preview = %s, want %s", got, want)
	}
}
