package otelguard

import (
	"strings"
	"sync"
	"unicode/utf8"
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

// modelLabels is the closed set of models an Observer's metrics name.
type modelLabels struct {
	seen  sync.Map // cut model → its own copy, as a string
	mu    sync.Mutex
	count int // entries in seen; under mu
}

// label returns the gen_ai.request.model of model on the metrics: model
// cut to MaxModelLabel bytes, while fewer than MaxModels models have been
// named, else OtherModel. The string returned never shares memory with
// model, so that a long name is not held by the metrics.
func (m *modelLabels) label(model string) string {
	if len(model) > MaxModelLabel {
		i := MaxModelLabel
		for i > 0 && !utf8.RuneStart(model[i]) {
			i--
		}
		model = model[:i]
	}
	if v, ok := m.seen.Load(model); ok {
		return v.(string)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.seen.Load(model); ok {
		return v.(string)
	}
	if m.count >= MaxModels {
		return OtherModel
	}
	own := strings.Clone(model)
	m.seen.Store(own, own)
	m.count++
	return own
}
