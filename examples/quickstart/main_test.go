package main

import (
	"context"
	"strings"
	"testing"
)

// TestQuickstart pins what the quickstart shows a new user: the bad call,
// the stripped null, the feedback, the corrected call and the answer.
func TestQuickstart(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`model: get_weather({"city": 75001, "units": null})`,
		`toolguard: removed empty values at /units`,
		`| - /city: expected string, got 75001`,
		`model: get_weather({"city": "Paris"})`,
		`agent runs get_weather({"city": "Paris"})`,
		`assistant: It is 18 °C and sunny in Paris.`,
		`3 model calls; the tool ran once, with valid arguments.`,
	}
	got := out.String()
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("quickstart output lacks %q (in order):\n%s", w, got)
		}
		at += i + len(w)
	}
}
