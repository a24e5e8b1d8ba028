package otelguard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/otelguard"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The model label is a closed set: a client that names a 2 MiB model, or
// a new model on every request, adds at most MaxModels series of at most
// MaxModelLabel bytes each to the metrics; the models past the bound are
// counted as OtherModel.
func TestModelLabelBounded(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	o := otelguard.New(otelguard.WithTracerProvider(tel.tp), otelguard.WithMeterProvider(tel.mp))
	request := func(model string) {
		_, end := o.OnModelCall(context.Background(), guard.ModelCall{Model: model})
		end(guard.ModelResult{InputTokens: 1, OutputTokens: 1})
	}
	huge := strings.Repeat("m", 2<<20)
	request(huge + "a")
	request(huge + "b") // the same model once cut
	request("gpt-4o")
	for i := range otelguard.MaxModels + 50 {
		request(fmt.Sprintf("model-%d", i))
	}
	request("gpt-4o") // named before the bound: keeps its label

	d, ok := find(tel.metrics(t), otelguard.DurationMetric).Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is not a float64 histogram", otelguard.DurationMetric)
	}
	counts := map[string]uint64{}
	for _, p := range d.DataPoints {
		model, _ := p.Attributes.Value("gen_ai.request.model")
		counts[model.AsString()] += p.Count
	}
	if len(counts) != otelguard.MaxModels+1 {
		t.Errorf("%d model labels, want %d (the first MaxModels models and OtherModel)", len(counts), otelguard.MaxModels+1)
	}
	for m := range counts {
		if len(m) > otelguard.MaxModelLabel {
			t.Errorf("a model label of %d bytes, want at most %d", len(m), otelguard.MaxModelLabel)
		}
	}
	if got := counts[huge[:otelguard.MaxModelLabel]]; got != 2 {
		t.Errorf("the cut 2 MiB model counts %d requests, want 2", got)
	}
	if got := counts["gpt-4o"]; got != 2 {
		t.Errorf("gpt-4o counts %d requests, want 2", got)
	}
	// 2 labels taken before the loop, so the loop's last 52 models are other.
	if got, want := counts[otelguard.OtherModel], uint64(52); got != want {
		t.Errorf("%s counts %d requests, want %d", otelguard.OtherModel, got, want)
	}
}

// A model cut on the metrics is cut at a UTF-8 boundary.
func TestModelLabelCutAtRune(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t)
	o := otelguard.New(otelguard.WithTracerProvider(tel.tp), otelguard.WithMeterProvider(tel.mp))
	model := strings.Repeat("a", otelguard.MaxModelLabel-1) + "é" // the é straddles the bound
	_, end := o.OnModelCall(context.Background(), guard.ModelCall{Model: model})
	end(guard.ModelResult{})
	d := find(tel.metrics(t), otelguard.DurationMetric).Data.(metricdata.Histogram[float64])
	got, _ := d.DataPoints[0].Attributes.Value("gen_ai.request.model")
	if want := model[:otelguard.MaxModelLabel-1]; got.AsString() != want {
		t.Errorf("model label %q, want %q", got.AsString(), want)
	}
}
