package main

import (
	"context"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// TestQuickstart pins what the quickstart shows a new user: the bad call,
// the stripped null, the feedback, the corrected call, the tool running once
// and the answer.
func TestQuickstart(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, scriptedModel()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`user: What's the weather in Paris?`,
		`model: get_weather({"city": 75001, "units": null})`,
		`toolguard: removed empty values at /units`,
		`toolguard: call_1 has invalid arguments`,
		`| - /city: expected string, got 75001`,
		`model: get_weather({"city": "Paris"})`,
		`tool get_weather runs with city="Paris" units=""`,
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
	if n := strings.Count(got, "tool get_weather runs"); n != 1 {
		t.Errorf("the tool ran %d times, want once:\n%s", n, got)
	}
}

// Without an API key the quickstart says so and runs on the fake model.
func TestQuickstartOffline(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	var out strings.Builder
	model, err := chooseModel(&out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := model.(*fakemodel.Model); !ok {
		t.Errorf("chooseModel without OPENAI_API_KEY = %T, want *fakemodel.Model", model)
	}
	if got := out.String(); got != "OPENAI_API_KEY is not set: running on a scripted fake model.\n" {
		t.Errorf("chooseModel printed %q, want one line saying it runs on the fake model", got)
	}
}
