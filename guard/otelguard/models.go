package otelguard

import (
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// The bounds of gen_ai.request.model on the metrics. The model is what a
// request names, which at the wire (httpguard, the proxy) is what a client
// sent: each distinct value would be a series of its own, held by the
// MeterProvider for the life of the process and written in every scrape.
const (
	// MaxModelLabel is the length in bytes past which a model is cut
	// (at a UTF-8 boundary) on the metrics: room for the long names
	// providers use (a Vertex AI resource path, a Bedrock inference
	// profile ARN).
	MaxModelLabel = 128
	// MaxModels is how many distinct models an Observer's metrics name:
	// the first MaxModels it sees (after cutting); every later one is
	// recorded as OtherModel.
	MaxModels = 100
	// OtherModel stands on the metrics for the models past MaxModels,
	// spelled as OpenTelemetry spells the values past a closed set
	// (error.type, http.request.method).
	OtherModel = "_OTHER"
)

// modelLabels is the closed set of models an Observer's metrics name,
// with the attribute sets a successful request of each records with,
// built once per label rather than sorted, deduplicated and hashed anew
// for every request (metric.WithAttributes). It holds at most MaxModels
// entries and two more (OtherModel's and a request without a model's),
// whatever the models requests name.
type modelLabels struct {
	provider    string     // gen_ai.provider.name, or ""
	none, other *modelSets // a request without a model's; OtherModel's
	seen        sync.Map   // cut model → *modelSets, its label its own copy
	mu          sync.Mutex
	count       int // entries in seen; under mu
}

// modelSets are the attributes of one label's requests: the
// attributes themselves (an error's request adds error.type to them) and
// the sets a successful request records its duration and its input and
// output tokens with, each as the options slice Record takes, so that
// passing it allocates no variadic slice either. The instruments only
// read them.
type modelSets struct {
	attrs                   []attribute.KeyValue // gen_ai.operation.name, provider, model
	duration, input, output []metric.RecordOption
}

// newModelLabels returns the empty set of an Observer whose provider is
// provider ("": none named).
func newModelLabels(provider string) *modelLabels {
	m := &modelLabels{provider: provider}
	m.none = m.newSets("")
	m.other = m.newSets(OtherModel)
	return m
}

// newSets builds the sets of label ("": no model).
func (m *modelLabels) newSets(label string) *modelSets {
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, semconv.GenAIOperationNameChat)
	if m.provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(m.provider))
	}
	if label != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(label))
	}
	attrs = slices.Clip(attrs)
	return &modelSets{
		attrs:    attrs,
		duration: recordWith(attrs...),
		input:    recordWith(append(attrs, semconv.GenAITokenTypeInput)...),
		output:   recordWith(append(attrs, semconv.GenAITokenTypeOutput)...),
	}
}

// recordWith returns the options of one Record with the set of attrs.
func recordWith(attrs ...attribute.KeyValue) []metric.RecordOption {
	return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
}

// sets returns the sets of model's label on the metrics: model cut to
// MaxModelLabel bytes, while fewer than MaxModels models have been named,
// else OtherModel; none's for "". The label never shares memory with
// model, so that a long name is not held by the metrics.
func (m *modelLabels) sets(model string) *modelSets {
	if model == "" {
		return m.none
	}
	if len(model) > MaxModelLabel {
		i := MaxModelLabel
		for i > 0 && !utf8.RuneStart(model[i]) {
			i--
		}
		model = model[:i]
	}
	if v, ok := m.seen.Load(model); ok {
		return v.(*modelSets)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.seen.Load(model); ok {
		return v.(*modelSets)
	}
	if m.count >= MaxModels {
		return m.other
	}
	own := strings.Clone(model)
	sets := m.newSets(own)
	m.seen.Store(own, sets)
	m.count++
	return sets
}
