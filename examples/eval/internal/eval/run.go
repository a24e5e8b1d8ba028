package eval

import (
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
)

// MaxRetries is the re-ask budget of every configuration: at most
// 1 + MaxRetries model calls per tool call.
const MaxRetries = 2

// Config is one ToolArgValidation set-up under test.
type Config struct {
	Name    string
	Options []guard.ValidationOption
	// RawSchema sends each tool's schema as JSON (Corrupted.Params), so
	// that the middleware compiles it with its own options, as it must for
	// WithClosedObjects. Otherwise the schema goes as the compiled
	// *validation.Schema, which validates the same and is compiled once for
	// all configurations.
	RawSchema bool
}

// Configs returns the configurations of the evaluation, each named by what
// it configures: no repair first (the baseline every row's "model calls
// saved" is counted against), then toolguard's default (coercions). All
// re-ask up to MaxRetries times; the last three differ from the default
// only in stripping or the feedback text.
func Configs() []Config {
	return []Config{
		{Name: "no repair (repair.None())", Options: []guard.ValidationOption{guard.WithRepair(repair.None())}},
		{Name: "default (coercions)"},
		{Name: "coercions and text repairs (repair.Default())", Options: []guard.ValidationOption{guard.WithRepair(repair.Default())}},
		{Name: "closed objects (WithClosedObjects)", Options: []guard.ValidationOption{guard.WithClosedObjects()}, RawSchema: true},
		{Name: "no stripping (strip.Off)", Options: []guard.ValidationOption{guard.WithStripEmpty(strip.Off)}},
		{Name: "feedback: first error only (jsonschema v5 Error())", Options: []guard.ValidationOption{guard.WithFeedback(FirstError)}},
		{Name: "feedback: the LangChain proposal's format", Options: []guard.ValidationOption{guard.WithFeedback(LangChain)}},
	}
}

// Stats aggregates the outcome of corrupted calls under one configuration.
type Stats struct {
	Calls      int   // corrupted calls run
	Valid      int   // calls whose final arguments validate
	ModelCalls int   // model calls made, over all calls
	NoCall     int   // calls valid after the first model call (stripped or repaired, no re-ask)
	Feedback   []int // the size in bytes of every feedback message sent
}

func (s *Stats) add(o *Stats) {
	s.Calls += o.Calls
	s.Valid += o.Valid
	s.ModelCalls += o.ModelCalls
	s.NoCall += o.NoCall
	s.Feedback = append(s.Feedback, o.Feedback...)
}

// KindReport is the outcome for one corruption kind.
type KindReport struct {
	Kind       Kind
	Applicable int     // calls the kind applied to
	Skipped    int     // calls it did not apply to
	ByConfig   []Stats // in the order of Report.Configs
}

// Report is the outcome of a run.
type Report struct {
	Seed    uint64
	Cases   int
	Configs []string
	Kinds   []KindReport // in the order of Kinds
}

// Overall pools every kind's stats for configuration i.
func (r *Report) Overall(i int) Stats {
	var s Stats
	for _, k := range r.Kinds {
		s.add(&k.ByConfig[i])
	}
	slices.Sort(s.Feedback) // each kind's is sorted, the concatenation is not
	return s
}

// Options configure Run.
type Options struct {
	Seed    uint64   // seeds every corruption (see Prepared.Corrupt)
	Configs []Config // default: Configs()
	Kinds   []Kind   // default: Kinds
	Workers int      // default: GOMAXPROCS
}

// Run corrupts every case in every kind and sends each corrupted call
// through every configuration, with SelfCorrecting as the model.
// The report is the same for the same cases and seed, however many workers
// run it.
func Run(ctx context.Context, cases []Case, opts Options) (*Report, error) {
	if opts.Configs == nil {
		opts.Configs = Configs()
	}
	if opts.Kinds == nil {
		opts.Kinds = Kinds
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	mws := make([]middleware.Middleware, len(opts.Configs))
	names := make([]string, len(opts.Configs))
	raw := make([]bool, len(opts.Configs))
	for i, c := range opts.Configs {
		raw[i] = c.RawSchema
		// The evaluation counts give-ups itself: a handler that does nothing
		// keeps them out of the log (a config's own handler wins).
		base := []guard.ValidationOption{guard.WithMaxRetries(MaxRetries), guard.WithEventHandler(ignoreEvent)}
		mws[i] = middleware.ToolArgValidation(append(base, c.Options...)...)
		names[i] = c.Name
	}

	newReport := func() *Report {
		r := &Report{Seed: opts.Seed, Configs: names, Kinds: make([]KindReport, len(opts.Kinds))}
		for i, k := range opts.Kinds {
			r.Kinds[i] = KindReport{Kind: k, ByConfig: make([]Stats, len(names))}
		}
		return r
	}
	total := newReport()
	total.Cases = len(cases)

	err := fanOut(ctx, len(cases), opts.Workers, newReport,
		func(i int, local *Report) error { return runCase(ctx, cases[i], i, opts, mws, raw, local) },
		func(local *Report) {
			for i := range local.Kinds {
				total.Kinds[i].Applicable += local.Kinds[i].Applicable
				total.Kinds[i].Skipped += local.Kinds[i].Skipped
				for j := range names {
					total.Kinds[i].ByConfig[j].add(&local.Kinds[i].ByConfig[j])
				}
			}
		})
	if err != nil {
		return nil, err
	}
	for i := range total.Kinds {
		for j := range names {
			slices.Sort(total.Kinds[i].ByConfig[j].Feedback)
		}
	}
	return total, nil
}

// cmpErr keeps the first error in a deterministic order.
func cmpErr(a, b error) error {
	if a == nil || (b != nil && b.Error() < a.Error()) {
		return b
	}
	return a
}

func runCase(ctx context.Context, c Case, index int, opts Options, mws []middleware.Middleware, raw []bool, r *Report) error {
	p, err := Prepare(c)
	if err != nil {
		return err
	}
	for ki, kind := range opts.Kinds {
		cor, ok := p.Corrupt(opts.Seed, index, kind)
		kr := &r.Kinds[ki]
		if !ok {
			kr.Skipped++
			continue
		}
		kr.Applicable++
		for ci, mw := range mws {
			sent := cor
			if !raw[ci] {
				sent.Params = nil
			}
			out, err := Attempt(ctx, mw, c.Tool, sent)
			if err != nil {
				return fmt.Errorf("%s, %v, %s: %w", c.ID, kind, r.Configs[ci], err)
			}
			s := &kr.ByConfig[ci]
			s.Calls++
			s.ModelCalls += out.ModelCalls
			s.Feedback = append(s.Feedback, out.Feedback...)
			if out.Valid {
				s.Valid++
				if out.ModelCalls == 1 {
					s.NoCall++
				}
			}
		}
	}
	return nil
}

// Outcome is what became of one corrupted call.
type Outcome struct {
	ModelCalls int    // model calls made
	Valid      bool   // the returned arguments validate
	Final      string // the returned arguments
	Feedback   []int  // the size of each feedback message sent
}

// Attempt sends one corrupted call of tool through mw, with a
// SelfCorrecting model that first sends cor.First and then
// corrects it from the feedback toward cor.Truth.
func Attempt(ctx context.Context, mw middleware.Middleware, tool string, cor Corrupted) (Outcome, error) {
	step := SelfCorrecting(tool, cor.Truth, cor.First)
	steps := make([]fakemodel.Step, 1+MaxRetries)
	for i := range steps {
		steps[i] = step
	}
	m := fakemodel.New(steps...)
	llm := middleware.Wrap(m, mw)
	var params any = cor.Schema
	if cor.Params != nil {
		params = cor.Params
	}
	t := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: tool, Parameters: params}}
	resp, err := llm.GenerateContent(ctx,
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Call "+tool+".")},
		llms.WithTools([]llms.Tool{t}))
	if err != nil {
		return Outcome{}, err
	}
	reqs := m.Requests()
	out := Outcome{ModelCalls: len(reqs)}
	for _, req := range reqs[1:] {
		last := req.Messages[len(req.Messages)-1]
		for _, part := range last.Parts {
			if tr, ok := part.(llms.ToolCallResponse); ok {
				out.Feedback = append(out.Feedback, len(tr.Content))
			}
		}
	}
	if len(resp.Choices) > 0 && len(resp.Choices[0].ToolCalls) > 0 {
		out.Final = resp.Choices[0].ToolCalls[0].FunctionCall.Arguments
		out.Valid = cor.Judge().ValidateJSON([]byte(out.Final)) == nil
	}
	return out, nil
}

// ignoreEvent is the evaluation's event handler: it reports nothing.
func ignoreEvent(context.Context, guard.Event) {}
