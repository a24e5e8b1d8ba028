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

// Without -openai the quickstart runs on the fake model and says so, even
// when OPENAI_API_KEY is set (most users have one): offline means offline.
func TestQuickstartOffline(t *testing.T) {
	for _, key := range []string{"", "sk-set-in-the-users-shell"} {
		t.Run("OPENAI_API_KEY="+key, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", key)
			var out strings.Builder
			model, err := chooseModel(&out, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := model.(*fakemodel.Model); !ok {
				t.Errorf("chooseModel(false) = %T, want *fakemodel.Model", model)
			}
			if got := out.String(); got != "Running offline on a scripted fake model (-openai runs on OpenAI).\n" {
				t.Errorf("chooseModel printed %q, want one line saying it runs on the fake model", got)
			}
		})
	}
}

// -openai without a key is a clear error, not a 401 from the provider.
func TestQuickstartOpenAINeedsKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	var out strings.Builder
	if _, err := chooseModel(&out, true); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("chooseModel(true) without a key: err = %v, want one naming OPENAI_API_KEY", err)
	}
}
