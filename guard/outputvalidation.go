package guard

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// ErrNoOutput is wrapped by the errors [OutputValidation] returns when a
// call ends without a valid answer: an *[InvalidOutputError], or a
// middleware's stand-in answer (middleware.StandInError: a limit's [ExitEnd] text,
// [ContinueOnFailure]'s) that reached it in place of the model's.
var ErrNoOutput = errors.New("guard: no valid structured answer")

// InvalidOutputError is returned by [OutputValidation] when the model's
// text answer is still not a JSON object its schema accepts after the last
// re-ask. errors.Is reaches [ErrNoOutput], errors.As the
// *[validation.Error].
type InvalidOutputError struct {
	Attempts int               // model calls made
	Err      *validation.Error // the last answer's violations
	// Response is the last response, as the adapter's type (package
	// middleware's *llms.ContentResponse, say).
	Response any
}

// Error says how many model calls were made and what the last answer's
// violations are.
func (e *InvalidOutputError) Error() string {
	return fmt.Sprintf("guard: answer still invalid after %d model calls: %v", e.Attempts, e.Err)
}

// Unwrap returns [ErrNoOutput] and the *[validation.Error].
func (e *InvalidOutputError) Unwrap() []error { return []error{ErrNoOutput, e.Err} }

const outputName = "OutputValidation"

// OutputValidation returns a middleware that makes sure a model's final
// answer — a response without tool calls — is a JSON object that schema
// accepts, for callers without package agent (an agent framework's own
// loop, a chain, a model in JSON mode); c reads and writes the host's
// requests and responses. schema is a *[validation.Schema]
// ([validation.Typed]: its Validate hook is enforced too) or any form
// [validation.Compile] takes; it is compiled here, and OutputValidation
// panics if it does not compile.
//
// The answer goes through the pipeline tool arguments go through in
// [ToolArgValidation] ([CheckArgs]): decoded exactly, empty values stripped
// per [WithStripEmpty], validated, and repaired as [WithRepair] says: by
// default the coercions ToolArgValidation makes ("3" for a number, "true"
// for a boolean; [repair.Coercions]); with repair.Default() a Markdown code
// fence or prose around the object is removed too. An empty answer is
// invalid.
//
// What is checked is what the caller reads: every text of the response a
// caller may read as the answer ([AnswerCodec.Answers]) is an answer on its
// own, and all must be valid; parts are never joined, so a blank part
// beside the answer, or an answer split across parts, is invalid, and the
// feedback says the parts are read one by one. The cleaned answers are
// written back ([AnswerCodec.SetAnswers]).
//
// While the answer is invalid the model is asked again, up to
// [WithMaxRetries] times (default 2), with the original messages, the
// rejected response's text as the model's turn and the violations as the
// user's ([errfmt.Answer], or [WithFeedback]'s text); not cumulative, as in
// ToolArgValidation. Then it fails closed with an *[InvalidOutputError]: a
// structured answer is never handed on unchecked ([WithFailClosed] changes
// nothing). A response with tool calls is not an answer and passes
// untouched.
//
// A stand-in answer coming from inside (a limiter's [ExitEnd] text,
// [ContinueOnFailure]'s: [ResponseInfo].StandIn) becomes an error wrapping
// [ErrNoOutput] and the stand-in's error. Place OutputValidation outside
// the limiters and ModelRetry so that theirs reach it.
//
// Streaming: each attempt's output is held ([HoldAll]), so a rejected
// answer never reaches the caller's stream; once an answer is accepted, the
// cleaned answer is streamed once. A response with tool calls releases what
// was held as it came. [EventReask] is reported before each re-ask, as
// ToolArgValidation reports it.
//
// Of the [ValidationOption]s it uses WithMaxRetries, WithStripEmpty,
// WithDefaultDraft, WithRepair, WithFeedback and WithEventHandler. Events:
// [EventInvalid] (Tool ""), [EventStripped], [EventRepaired],
// [EventReask], [EventGiveUp]. The middleware is safe for concurrent use.
func OutputValidation[Req, Resp any](c AnswerCodec[Req, Resp], schema any, opts ...ValidationOption) Middleware[Req, Resp] {
	cfg := validationConfig{maxRetries: 2, strip: strip.SchemaAware, draft: validation.Draft7, repair: repair.Coercions()}
	for _, o := range opts {
		if o != nil {
			o.applyValidation(&cfg)
		}
	}
	if cfg.feedback == nil {
		cfg.feedback = errfmt.Answer
	}
	if schema == nil {
		panic("guard: OutputValidation(nil): the schema must not be nil")
	}
	s, ok := schema.(*validation.Schema)
	if !ok || s == nil {
		var err error
		if s, err = validation.Compile(schema, validation.WithDefaultDraft(cfg.draft)); err != nil {
			panic(fmt.Sprintf("guard: OutputValidation: the schema does not compile: %v", err))
		}
	}
	m := &outputValidation{cfg: cfg, schema: s}
	return func(next Handler[Req, Resp]) Handler[Req, Resp] {
		return func(ctx context.Context, req Req) (Resp, error) {
			return validateAnswer(ctx, m, c, next, req)
		}
	}
}

type outputValidation struct {
	cfg    validationConfig
	schema *validation.Schema
}

func (m *outputValidation) emit(ctx context.Context, e Event) {
	e.Middleware = outputName
	report(ctx, m.cfg.events, e)
}

// validateAnswer is one logical call through an OutputValidation: the loop
// of attempts ([reask]), each answer checked and, while invalid, re-asked.
func validateAnswer[Req, Resp any](ctx context.Context, m *outputValidation, c AnswerCodec[Req, Resp], next Handler[Req, Resp], req Req) (Resp, error) {
	return reask(ctx, c.Request(ctx, req).Stream, HoldAll, next, req, func(attempt int, gate Gate[Resp], resp Resp, err error) turn[Req, Resp] {
		if err != nil {
			return turn[Req, Resp]{err: err}
		}
		got := c.Response(req, resp)
		if len(got.Calls) > 0 {
			resp, err := deliver(ctx, gate, resp) // a tool-calling turn: what was held, as it came
			return turn[Req, Resp]{resp: resp, err: err}
		}
		if got.StandIn != nil {
			return turn[Req, Resp]{err: fmt.Errorf("%w: %w", ErrNoOutput, got.StandIn)}
		}
		resp, verr, err := checkAnswer(ctx, m, c, resp, attempt)
		switch {
		case err != nil:
			return turn[Req, Resp]{err: err}
		case verr == nil:
			resp, err := deliver(ctx, gate, resp)
			return turn[Req, Resp]{resp: resp, err: err}
		}
		feedback := m.cfg.feedback(verr)
		m.emit(ctx, Event{Kind: EventInvalid, Attempt: attempt, Err: verr, Feedback: feedback})
		if attempt > m.cfg.maxRetries {
			m.emit(ctx, Event{Kind: EventGiveUp, Attempt: attempt, Err: verr})
			return turn[Req, Resp]{err: &InvalidOutputError{Attempts: attempt, Err: verr, Response: resp}}
		}
		return turn[Req, Resp]{again: func() (Req, error) {
			m.emit(ctx, Event{Kind: EventReask, Attempt: attempt + 1})
			return c.ReaskAnswer(req, resp, feedback)
		}}
	})
}

// checkAnswer validates every text of resp a caller may read as the answer
// ([AnswerCodec.Answers]) — each on its own: a caller reading one reads
// the first, a caller that asked for several reads each — and, when all are
// valid, writes the cleaned answers back ([AnswerCodec.SetAnswers]). It
// returns the violations of the first invalid one, or nil.
func checkAnswer[Req, Resp any](ctx context.Context, m *outputValidation, c AnswerCodec[Req, Resp], resp Resp, attempt int) (Resp, *validation.Error, error) {
	answers := c.Answers(resp)
	if len(answers) == 0 {
		return resp, emptyAnswer(), nil
	}
	results := make([]ArgsResult, len(answers))
	for i, a := range answers {
		if strings.TrimSpace(a) == "" {
			return resp, severalParts(emptyAnswer(), len(answers)), nil
		}
		results[i] = CheckArgs(m.schema, []byte(a), ArgsOptions{Strip: m.cfg.strip, Repair: m.cfg.repair})
		if results[i].Err != nil {
			return resp, severalParts(m.violations(results[i].Err), len(answers)), nil
		}
	}
	cleaned := make([]string, len(answers))
	for i, res := range results {
		if len(res.Repairs) > 0 {
			names := make([]string, len(res.Repairs))
			for j, r := range res.Repairs {
				names[j] = r.String()
			}
			m.emit(ctx, Event{Kind: EventRepaired, Attempt: attempt, Paths: names})
		}
		if len(res.Stripped) > 0 {
			m.emit(ctx, Event{Kind: EventStripped, Attempt: attempt, Paths: res.Stripped})
		}
		cleaned[i] = answers[i]
		if res.Changed {
			cleaned[i] = string(res.Args)
		}
	}
	resp, err := c.SetAnswers(resp, cleaned)
	return resp, nil, err
}

// emptyAnswer is the violation of an answer without text.
func emptyAnswer() *validation.Error {
	return &validation.Error{Violations: []validation.Violation{{Keyword: "json", Message: "the answer is empty; " + errfmt.AnswerNotJSON}}}
}

// severalParts adds to verr, the violations of one of the n parts that had
// text, that each of them is read as a whole answer.
func severalParts(verr *validation.Error, n int) *validation.Error {
	if n < 2 {
		return verr
	}
	verr.Violations = append(verr.Violations, validation.Violation{Keyword: "json",
		Message: fmt.Sprintf("the answer came in %d text parts, and each part is read as a whole answer: send the JSON object alone, in one part", n)})
	return verr
}

// violations returns what the model is told about an invalid answer:
// verr, as for tool arguments (a repair that does not make the answer
// valid is dropped, and the model told what was wrong with what it sent),
// with a root message about "arguments" speaking of the answer.
func (m *outputValidation) violations(verr *validation.Error) *validation.Error {
	out := *verr
	out.Violations = make([]validation.Violation, len(verr.Violations))
	for i, v := range verr.Violations {
		if v.Path == "" {
			if rest, ok := strings.CutPrefix(v.Message, "arguments are "); ok {
				v.Message = "the answer is " + rest
			} else if rest, ok := strings.CutPrefix(v.Message, "arguments "); ok {
				v.Message = "the answer " + rest
			}
		}
		out.Violations[i] = v
	}
	return &out
}
