package otelguard

import (
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The attribute sets built once per model are held for the model labels
// alone: a client naming a new model on every request, or a long one,
// grows them to at most MaxModels entries (and OtherModel's and no
// model's, built up front), each of at most MaxModelLabel bytes; every
// model past the bound shares OtherModel's sets.
func TestModelSetsBounded(t *testing.T) {
	t.Parallel()
	m := newModelLabels("openai")
	huge := strings.Repeat("m", 4*MaxModelLabel)
	for i := range MaxModels + 50 {
		m.sets(fmt.Sprintf("%s-%d", huge, i)) // all cut to the same label
		m.sets(fmt.Sprintf("model-%d", i))
	}
	entries := 0
	m.seen.Range(func(k, v any) bool {
		entries++
		if len(k.(string)) > MaxModelLabel {
			t.Errorf("a cached label of %d bytes, want at most %d", len(k.(string)), MaxModelLabel)
		}
		return true
	})
	if entries != MaxModels {
		t.Errorf("%d models hold sets, want %d (MaxModels)", entries, MaxModels)
	}
	if got := m.sets("model-new"); got != m.other {
		t.Errorf("a model past MaxModels got sets of its own, want OtherModel's")
	}
	if got := m.sets(""); got != m.none {
		t.Errorf("a request without a model got sets other than none's")
	}
}

// Each label's sets hold exactly the attributes the request's points
// carried before they were built once: the operation, the provider when
// named, the model's label, and the token type for the token sets.
func TestModelSetsAttributes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		provider, model string
		want            string
	}{
		{"openai", "gpt-4o", "gen_ai.operation.name=chat,gen_ai.provider.name=openai,gen_ai.request.model=gpt-4o"},
		{"", "gpt-4o", "gen_ai.operation.name=chat,gen_ai.request.model=gpt-4o"},
		{"anthropic", "", "gen_ai.operation.name=chat,gen_ai.provider.name=anthropic"},
	} {
		s := newModelLabels(tc.provider).sets(tc.model)
		for _, set := range []struct {
			name string
			got  attribute.Set
			want string
		}{
			{"duration", setOf(s.duration), tc.want},
			{"input", setOf(s.input), tc.want + ",gen_ai.token.type=input"},
			{"output", setOf(s.output), tc.want + ",gen_ai.token.type=output"},
		} {
			if got := set.got.Encoded(attribute.DefaultEncoder()); got != set.want {
				t.Errorf("provider %q, model %q: the %s set is %s, want %s", tc.provider, tc.model, set.name, got, set.want)
			}
		}
	}
}

// setOf is the attribute set of a Record's options.
func setOf(opts []metric.RecordOption) attribute.Set {
	return metric.NewRecordConfig(opts).Attributes()
}
