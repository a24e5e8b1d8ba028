package middleware

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/internal/toolargs"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// ErrNoOutput is wrapped by the errors [OutputValidation] returns when a
// call ends without a valid answer: an *[InvalidOutputError], or a
// middleware's stand-in answer ([StandInError]: a limit's [ExitEnd] text,
// [ContinueOnFailure]'s) that reached it in place of the model's.
var ErrNoOutput = errors.New("middleware: no valid structured answer")

// InvalidOutputError is returned by [OutputValidation] when the model's
// text answer is still not a JSON object its schema accepts after the last
// re-ask. errors.Is reaches [ErrNoOutput], errors.As the
// *[validation.Error].
type InvalidOutputError struct {
	Attempts int               // model calls made
	Err      *validation.Error // the last answer's violations
	Response *llms.ContentResponse
}

func (e *InvalidOutputError) Error() string {
	return fmt.Sprintf("middleware: answer still invalid after %d model calls: %v", e.Attempts, e.Err)
}

// Unwrap returns [ErrNoOutput] and the *[validation.Error].
func (e *InvalidOutputError) Unwrap() []error { return []error{ErrNoOutput, e.Err} }

const outputName = "OutputValidation"

// OutputValidation returns a middleware that makes sure a model's final
// answer — a response without tool calls — is a JSON object that schema
// accepts, for callers without package agent: langchaingo's
// agents.Executor, a chain, a model in JSON mode (llms.WithJSONMode).
// schema is a *[validation.Schema] ([validation.Typed]: its Validate hook is
// enforced too) or any form [validation.Compile] takes; it is compiled
// here, and OutputValidation panics if it does not compile.
//
// The answer goes through the pipeline tool arguments go through in
// [ToolArgValidation]: decoded exactly, empty values stripped per
// [WithStripEmpty], validated, and repaired as [WithRepair] says: by
// default the coercions ToolArgValidation makes ("3" for a number, "true"
// for a boolean; [repair.Coercions]); with repair.Default() a Markdown code
// fence or prose around the object is removed too. An empty answer is
// invalid.
//
// What is checked is what the caller reads: every choice of the response
// that has text is an answer on its own, and all must be valid —
// Choices[0] is what llms.GenerateFromSinglePrompt, chains and
// langchaingo's agents return, and a caller that asked for several
// choices (llms.WithN) reads each. Choices are never joined: a blank
// choice beside the answer, or an answer split across choices (Anthropic's
// provider gives one choice per content block), is invalid, and the
// feedback says the parts are read one by one. Each cleaned answer is
// written back into its choice, and when Choices[0] has no text (a
// thinking block first) the first answer is moved there: what Choices[0],
// [ResponseText] and the stream show was checked.
//
// While the answer is invalid the model is asked again, up to
// [WithMaxRetries] times (default 2), with the original messages, the
// rejected response's text (its choices' joined) as an AI message and the
// violations as a human message ([errfmt.Answer], or [WithFeedback]'s
// text); not cumulative, as in ToolArgValidation. Then it
// fails closed with an *[InvalidOutputError]: a structured answer is never
// handed on unchecked ([WithFailClosed] changes nothing). A response with
// tool calls is not an answer and passes untouched.
//
// A stand-in answer coming from inside (a limiter's [ExitEnd] text,
// [ContinueOnFailure]'s, see [StandInError]) becomes an error wrapping
// [ErrNoOutput] and the stand-in's error. Place OutputValidation outside
// the limiters and ModelRetry so that theirs reach it:
//
//	Wrap(model, OutputValidation(schema), ToolCallLimit(...), ToolArgValidation(), ModelRetry())
//
// Streaming: each attempt's text chunks are held, not shown, so a rejected
// answer never reaches the caller's streaming function; once an answer is
// accepted, the (cleaned) answer in Choices[0] is streamed as one chunk.
// A response with tool calls releases its held chunks unchanged, in
// order. Reasoning chunks reach the caller at once. [EventReask] is
// reported before each re-ask, as ToolArgValidation reports it.
//
// Of the [ValidationOption]s it uses WithMaxRetries, WithStripEmpty,
// WithDefaultDraft, WithRepair, WithFeedback and WithEventHandler. Events:
// [EventInvalid] (Tool ""), [EventStripped], [EventRepaired],
// [EventReask], [EventGiveUp]. The middleware is safe for concurrent use.
func OutputValidation(schema any, opts ...ValidationOption) Middleware {
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
		panic("middleware: OutputValidation(nil): the schema must not be nil")
	}
	s, ok := schema.(*validation.Schema)
	if !ok || s == nil {
		var err error
		if s, err = validation.Compile(schema, validation.WithDefaultDraft(cfg.draft)); err != nil {
			panic(fmt.Sprintf("middleware: OutputValidation: the schema does not compile: %v", err))
		}
	}
	return &outputValidation{cfg: cfg, schema: s}
}

type outputValidation struct {
	cfg    validationConfig
	schema *validation.Schema
}

func (m *outputValidation) emit(ctx context.Context, e Event) {
	e.Middleware = outputName
	report(ctx, m.cfg.events, e)
}

func (m *outputValidation) WrapModelCall(next Handler) Handler {
	return func(ctx context.Context, req *Request) (*llms.ContentResponse, error) {
		attemptReq, st := req, streamOf(req)
		for attempt := 1; ; attempt++ {
			attemptCtx, streamReq, hold := st.hold(ctx, attemptReq)
			resp, err := next(attemptCtx, streamReq)
			if err != nil {
				return nil, err
			}
			if len(collectToolCalls(resp, len(req.Messages))) > 0 {
				return hold.release(ctx, resp)
			}
			if se := StandInError(resp); se != nil {
				return nil, fmt.Errorf("%w: %w", ErrNoOutput, se)
			}
			text := ResponseText(resp) // the model's turn, replayed on a re-ask
			verr := m.check(ctx, resp, attempt)
			if verr == nil {
				return hold.answer(ctx, resp)
			}
			feedback := m.cfg.feedback(verr)
			m.emit(ctx, Event{Kind: EventInvalid, Attempt: attempt, Err: verr, Feedback: feedback})
			if attempt > m.cfg.maxRetries {
				m.emit(ctx, Event{Kind: EventGiveUp, Attempt: attempt, Err: verr})
				return nil, &InvalidOutputError{Attempts: attempt, Err: verr, Response: resp}
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			m.emit(ctx, Event{Kind: EventReask, Attempt: attempt + 1})
			attemptReq = &Request{
				Messages: withReplay(req.Messages, []llms.MessageContent{
					llms.TextParts(llms.ChatMessageTypeAI, text),
					llms.TextParts(llms.ChatMessageTypeHuman, feedback),
				}),
				Options: req.Options,
			}
		}
	}
}

// check validates every choice of resp that has text — each is an answer
// some caller reads: Choices[0] by llms.GenerateFromSinglePrompt, chains
// and langchaingo's agents, each of them by a caller that asked for
// several (llms.WithN) — and, when all are valid, writes the cleaned
// answers back (see [moveAnswerFirst]). It returns the violations of the first
// invalid one, or nil.
func (m *outputValidation) check(ctx context.Context, resp *llms.ContentResponse, attempt int) *validation.Error {
	var answers []*llms.ContentChoice
	for _, c := range resp.Choices {
		if c != nil && c.Content != "" {
			answers = append(answers, c)
		}
	}
	if len(answers) == 0 {
		return emptyAnswer()
	}
	results := make([]toolargs.Result, len(answers))
	for i, c := range answers {
		if strings.TrimSpace(c.Content) == "" {
			return severalParts(emptyAnswer(), len(answers))
		}
		results[i] = toolargs.Check(m.schema, []byte(c.Content), toolargs.Options{Strip: m.cfg.strip, Repair: m.cfg.repair})
		if results[i].Err != nil {
			return severalParts(m.violations(results[i].Err), len(answers))
		}
	}
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
		if res.Changed {
			answers[i].Content = string(res.Args)
		}
	}
	moveAnswerFirst(resp, answers[0])
	return nil
}

// emptyAnswer is the violation of an answer without text.
func emptyAnswer() *validation.Error {
	return &validation.Error{Violations: []validation.Violation{{Keyword: "json", Message: "the answer is empty; " + errfmt.AnswerNotJSON}}}
}

// severalParts adds to verr, the violations of one of the n choices that
// had text, that each of them is read as a whole answer.
func severalParts(verr *validation.Error, n int) *validation.Error {
	if n < 2 {
		return verr
	}
	verr.Violations = append(verr.Violations, validation.Violation{Keyword: "json",
		Message: fmt.Sprintf("the answer came in %d text parts, and each part is read as a whole answer: send the JSON object alone, in one part", n)})
	return verr
}

// moveAnswerFirst makes sure Choices[0] of an accepted resp, what
// llms.GenerateFromSinglePrompt returns, holds an answer: when it has no
// text (Anthropic's thinking block comes first) the text of first, the
// first choice with text, moves there.
func moveAnswerFirst(resp *llms.ContentResponse, first *llms.ContentChoice) {
	c0 := resp.Choices[0]
	if c0 == first {
		return
	}
	if c0 == nil {
		c0 = &llms.ContentChoice{}
		resp.Choices[0] = c0
	}
	c0.Content, first.Content = first.Content, ""
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

// hold returns the context and request of one attempt of OutputValidation,
// whose streaming functions hold every text chunk in the returned hold,
// and the hold. Reasoning passes through at once. On a nil s it returns
// ctx, req and a nil hold.
func (s *stream) hold(ctx context.Context, req *Request) (context.Context, *Request, *answerHold) {
	if s == nil {
		return ctx, req, nil
	}
	h := &answerHold{s: s}
	opts := make([]llms.CallOption, len(req.Options), len(req.Options)+2)
	copy(opts, req.Options)
	if s.text != nil {
		opts = append(opts, llms.WithStreamingFunc(h.onText))
	}
	if s.reasoning != nil {
		opts = append(opts, llms.WithStreamingReasoningFunc(h.onReasoning))
	}
	return ctx, &Request{Messages: req.Messages, Options: opts}, h
}

// answerHold keeps the text chunks of one attempt until it is known
// whether the attempt is a final answer (then only the accepted answer is
// streamed) or a tool-calling turn (then the chunks are released).
type answerHold struct {
	s  *stream
	mu sync.Mutex // providers may stream on another goroutine
	// chunks held, in order; reasoning marks those from the reasoning
	// function (their reasoning part was passed on at once).
	chunks []heldChunk
	text   bool // the text function had chunks
	reason bool // the reasoning function had non-reasoning chunks
}

type heldChunk struct {
	reasoning bool
	b         []byte
}

func (h *answerHold) onText(_ context.Context, chunk []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chunks = append(h.chunks, heldChunk{b: append([]byte(nil), chunk...)})
	h.text = true
	return nil
}

func (h *answerHold) onReasoning(ctx context.Context, reasoningChunk, chunk []byte) error {
	if len(chunk) > 0 {
		h.mu.Lock()
		h.chunks = append(h.chunks, heldChunk{reasoning: true, b: append([]byte(nil), chunk...)})
		h.reason = true
		h.mu.Unlock()
	}
	if len(reasoningChunk) == 0 {
		return nil
	}
	return h.s.reasoning(ctx, reasoningChunk, []byte{})
}

// release streams the held chunks as they came, and returns resp.
func (h *answerHold) release(ctx context.Context, resp *llms.ContentResponse) (*llms.ContentResponse, error) {
	if h == nil {
		return resp, nil
	}
	h.mu.Lock()
	chunks := h.chunks
	h.chunks = nil
	h.mu.Unlock()
	for _, c := range chunks {
		var err error
		if c.reasoning {
			err = h.s.reasoning(ctx, []byte{}, c.b)
		} else {
			err = h.s.text(ctx, c.b)
		}
		if err != nil {
			return nil, fmt.Errorf("middleware: streaming func returned an error: %w", err)
		}
	}
	return resp, nil
}

// answer streams the accepted answer of resp, once, to each function that
// had chunks held, and returns resp.
func (h *answerHold) answer(ctx context.Context, resp *llms.ContentResponse) (*llms.ContentResponse, error) {
	if h == nil {
		return resp, nil
	}
	h.mu.Lock()
	text, reason := h.text, h.reason
	h.chunks = nil
	h.mu.Unlock()
	answer := []byte(resp.Choices[0].Content)
	if text {
		if err := h.s.text(ctx, answer); err != nil {
			return nil, fmt.Errorf("middleware: streaming func returned an error: %w", err)
		}
	}
	if reason {
		if err := h.s.reasoning(ctx, []byte{}, answer); err != nil {
			return nil, fmt.Errorf("middleware: streaming reasoning func returned an error: %w", err)
		}
	}
	return resp, nil
}
