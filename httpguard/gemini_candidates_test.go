package httpguard

import (
	"testing"
)

// A Gemini answer whose candidates are several, one of them with a
// function call, cannot be guarded: a client may read the calls of any
// candidate, so reading the first only would pass the others' unchecked.
// Sync and streamed (several candidates in one chunk, or one per chunk
// told apart by index), it is refused as unguardable; several candidates
// without calls are read as the first and stream through.
func TestGeminiSeveralCandidates(t *testing.T) {
	t.Parallel()
	const (
		text = `{"content":{"role":"model","parts":[{"text":"Let me check."}]},"index":0}`
		call = `{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":42}}}]},"index":1}`
		alt  = `{"content":{"role":"model","parts":[{"text":"Sunny."}]},"index":1}`
	)
	w := geminiWire{}
	for _, resp := range []string{
		`{"candidates":[` + text + `,` + call + `]}`,
		`{"candidates":[` + call + `,` + text + `]}`,
	} {
		if calls, err := w.calls([]byte(resp)); !isUnguardable(err) {
			t.Errorf("calls of %s: %v, %v; want an unguardable error", resp, calls, err)
		}
		if _, err := w.accept([]byte(resp), nil); !isUnguardable(err) {
			t.Errorf("accept of %s: %v, want an unguardable error", resp, err)
		}
	}
	if calls, err := w.calls([]byte(`{"candidates":[` + text + `,` + alt + `]}`)); err != nil || len(calls) != 0 {
		t.Errorf("two candidates without calls: %v, %v; want no calls, no error", calls, err)
	}

	for name, chunks := range map[string][]string{
		"one chunk":       {`{"candidates":[` + text + `,` + call + `]}`},
		"chunk by chunk":  {`{"candidates":[` + text + `]}`, `{"candidates":[` + call + `]}`},
		"call then other": {`{"candidates":[` + call[:len(call)-len(`"index":1}`)] + `"index":0}]}`, `{"candidates":[` + alt + `]}`},
	} {
		a := w.newAssembler()
		var err error
		for _, c := range chunks {
			if _, err = a.add(streamEvent{Data: []byte(c)}); err != nil {
				break
			}
		}
		if err == nil {
			_, err = a.response()
		}
		if !isUnguardable(err) {
			t.Errorf("%s: %v, want an unguardable error", name, err)
		}
	}
	a := w.newAssembler()
	for _, c := range []string{`{"candidates":[` + text + `]}`, `{"candidates":[` + alt + `]}`} {
		if _, err := a.add(streamEvent{Data: []byte(c)}); err != nil {
			t.Fatalf("two candidates without calls, streamed: %v", err)
		}
	}
	if resp, err := a.response(); err != nil || guardText(t, wireCase{w: w}, resp) != "Let me check." {
		t.Errorf("two candidates without calls, streamed: %q, %v; want the first's text", resp, err)
	}
}
