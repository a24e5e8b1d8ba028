package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// The structured-output evaluation: each corrupted call's arguments stand
// for a run's final answer, and its schema for the output schema. The same
// corruptions as for tool arguments, the same literal-minded model
// (Correct), through the ways toolguard gets a structured answer.

// OutputConfig is one way of getting a structured final answer under test.
type OutputConfig struct {
	Name string
	// run gets one corrupted answer; nil: the answer is taken as sent.
	run func(ctx context.Context, cor Corrupted) (outputOutcome, error)
}

// OutputConfigs returns the configurations of the structured-output
// evaluation: no check first, then the agent's answer tool (checked by the
// agent itself, then through ToolArgValidation with repair) and the
// model-stage OutputValidation without and with repair. (The answer tool
// through ToolArgValidation without repair scores as the agent's own
// check: the same pipeline and feedback; it is left out to keep the run
// short.)
func OutputConfigs() []OutputConfig {
	repairOn := guard.WithRepair(repair.Default())
	return []OutputConfig{
		{Name: "no check (answer taken as sent)"},
		{Name: "agent answer tool", run: agentAnswer()},
		{Name: "agent answer tool + ToolArgValidation + repair", run: agentAnswer(middleware.ToolArgValidation(guard.WithMaxRetries(MaxRetries), repairOn))},
		{Name: "OutputValidation (text answer)", run: textAnswer()},
		{Name: "OutputValidation + repair", run: textAnswer(repairOn)},
	}
}

// outputOutcome is what became of one corrupted answer.
type outputOutcome struct {
	modelCalls int
	valid      bool // the run returned an answer that validates
	wrong      bool // the run returned, as its answer, one that does not
}

// OutputStats aggregates the outcome of corrupted answers under one
// configuration.
type OutputStats struct {
	Answers    int // corrupted answers run
	Valid      int // runs that returned a valid answer
	ModelCalls int // model calls, over all runs
	NoReask    int // valid after the first model call (repaired or stripped)
	Wrong      int // runs that returned an invalid answer as if it were valid
}

// OutputReport is the outcome of RunOutput.
type OutputReport struct {
	Seed    uint64
	Cases   int
	Configs []string
	Stats   []OutputStats // in the order of Configs, all kinds pooled
}

// RunOutput corrupts every case in every kind (opts.Kinds, opts.Seed: the
// corruptions of Run) and gets each corrupted answer through every
// configuration of OutputConfigs. opts.Configs is not used. The report is
// the same for the same cases and seed, however many workers run it.
func RunOutput(ctx context.Context, cases []Case, opts Options) (*OutputReport, error) {
	if opts.Kinds == nil {
		opts.Kinds = Kinds
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	configs := OutputConfigs()
	r := &OutputReport{Seed: opts.Seed, Cases: len(cases), Configs: make([]string, len(configs)), Stats: make([]OutputStats, len(configs))}
	for i, c := range configs {
		r.Configs[i] = c.Name
	}
	err := fanOut(ctx, len(cases), opts.Workers,
		func() []OutputStats { return make([]OutputStats, len(configs)) },
		func(i int, local []OutputStats) error { return outputCase(ctx, cases[i], i, opts, configs, local) },
		func(local []OutputStats) {
			for j := range local {
				s, l := &r.Stats[j], local[j]
				s.Answers += l.Answers
				s.Valid += l.Valid
				s.ModelCalls += l.ModelCalls
				s.NoReask += l.NoReask
				s.Wrong += l.Wrong
			}
		})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func outputCase(ctx context.Context, c Case, index int, opts Options, configs []OutputConfig, stats []OutputStats) error {
	p, err := Prepare(c)
	if err != nil {
		return err
	}
	for _, kind := range opts.Kinds {
		cor, ok := p.Corrupt(opts.Seed, index, kind)
		if !ok {
			continue
		}
		for ci, cfg := range configs {
			out := outputOutcome{modelCalls: 1, wrong: true} // taken as sent: corrupted answers never validate
			if cfg.run != nil {
				if out, err = cfg.run(ctx, cor); err != nil {
					return fmt.Errorf("%s, %v, %s: %w", c.ID, kind, cfg.Name, err)
				}
			}
			s := &stats[ci]
			s.Answers++
			s.ModelCalls += out.modelCalls
			if out.valid {
				s.Valid++
				if out.modelCalls == 1 {
					s.NoReask++
				}
			}
			if out.wrong {
				s.Wrong++
			}
		}
	}
	return nil
}

// agentAnswer returns a configuration that runs an agent with the answer's
// schema as its output schema, the model stage's mws, and a SelfCorrecting
// model that calls the answer tool.
func agentAnswer(mws ...middleware.Middleware) func(context.Context, Corrupted) (outputOutcome, error) {
	return func(ctx context.Context, cor Corrupted) (outputOutcome, error) {
		step := SelfCorrecting(agent.OutputToolName, cor.Truth, cor.First)
		// Enough for every re-ask: the agent's, each with the middleware's.
		steps := make([]fakemodel.Step, (1+MaxRetries)*(1+MaxRetries))
		for i := range steps {
			steps[i] = step
		}
		a := agent.New(fakemodel.New(steps...), toolstage.New(nil), agent.WithOutputSchema(cor.Schema), agent.WithMiddleware(mws...))
		res, err := a.Run(ctx, "Answer.")
		out := outputOutcome{}
		if res != nil {
			out.modelCalls = res.ModelCalls
		}
		switch {
		case errors.Is(err, agent.ErrNoOutput):
		case err != nil:
			return out, err
		default:
			out.valid = cor.Schema.ValidateJSON([]byte(res.Output)) == nil
			out.wrong = !out.valid
		}
		return out, nil
	}
}

// textAnswer returns a configuration that asks a model wrapped in
// OutputValidation (with opts) for a text answer, the model correcting its
// text from the feedback as SelfCorrecting corrects a call.
func textAnswer(opts ...guard.ValidationOption) func(context.Context, Corrupted) (outputOutcome, error) {
	return func(ctx context.Context, cor Corrupted) (outputOutcome, error) {
		step := selfCorrectingText(cor.Truth, cor.First)
		steps := make([]fakemodel.Step, 1+MaxRetries)
		for i := range steps {
			steps[i] = step
		}
		m := fakemodel.New(steps...)
		mw := middleware.OutputValidation(cor.Schema, append([]guard.ValidationOption{guard.WithMaxRetries(MaxRetries)}, opts...)...)
		resp, err := middleware.Wrap(m, mw).GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Answer in JSON.")})
		out := outputOutcome{modelCalls: len(m.Requests())}
		switch {
		case errors.Is(err, guard.ErrNoOutput):
		case err != nil:
			return out, err
		default:
			out.valid = validText(cor.Schema, middleware.ResponseText(resp))
			out.wrong = !out.valid
		}
		return out, nil
	}
}

func validText(s *validation.Schema, text string) bool {
	return strings.TrimSpace(text) != "" && s.ValidateJSON([]byte(text)) == nil
}

// selfCorrectingText is SelfCorrecting for a text answer: it answers first,
// or, when the request ends with its previous answer (an AI message) and
// feedback (a human message), Correct(truth, previous, feedback).
func selfCorrectingText(truth, first string) fakemodel.Step {
	return fakemodel.Func(func(_ context.Context, msgs []llms.MessageContent, _ llms.CallOptions) (*llms.ContentResponse, error) {
		text := first
		if n := len(msgs); n >= 3 && msgs[n-1].Role == llms.ChatMessageTypeHuman && msgs[n-2].Role == llms.ChatMessageTypeAI {
			text = Correct(truth, partsText(msgs[n-2]), partsText(msgs[n-1]))
		}
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: text, StopReason: "stop"}}}, nil
	})
}

func partsText(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// Markdown writes the report as one Markdown table, every kind pooled.
func (r *OutputReport) Markdown(w io.Writer) error {
	var b strings.Builder
	answers := 0
	if len(r.Stats) > 0 {
		answers = r.Stats[0].Answers
	}
	fmt.Fprintf(&b, "\n#### Corrupted final answers (%s; the same corruptions of the same calls, each call's arguments standing for a run's structured answer)\n\n", thousands(answers))
	b.WriteString("| configuration | answers ending valid | model calls per answer | fixed with no re-ask | invalid answer returned as valid |\n")
	b.WriteString("|---|--:|--:|--:|--:|\n")
	for i, name := range r.Configs {
		s := r.Stats[i]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name,
			percent(s.Valid, s.Answers), mean(s.ModelCalls, s.Answers), percent(s.NoReask, s.Answers), percent(s.Wrong, s.Answers))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
