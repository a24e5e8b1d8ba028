package guard

import (
	"context"

	"github.com/toolguard/toolguard/validation"
)

// Call is one tool call as the host delivered it.
type Call struct {
	// ID is the call's id: as the model sent it, or as the codec made it
	// when the host gives none and needs one. "" when the host has none
	// (Gemini's calls have no id: they are matched by position).
	ID string
	// Name is the called tool's name.
	Name string
	// Args are the arguments as the model sent them (often a JSON object,
	// but whatever it sent; empty, not nil, when it sent none). A call
	// with nil Args and no Name is a call without a function, which
	// [ToolArgValidation] rejects and the limits do not count.
	Args []byte
}

// Tool is one tool a request offers the model, as the stages see it.
type Tool struct {
	Name string
	// Schema is the tool's parameters schema in any form
	// [validation.Compile] takes (a map, raw JSON, a *validation.Schema, a
	// JSON-marshalable value); nil means no schema: any JSON object.
	Schema any
}

// Verdict is what [ToolArgValidation] made of one call of a response, for
// [Codec.Accept].
type Verdict struct {
	// Args, when not nil, are the call's arguments to write back into the
	// response: stripped of empty values, repaired, or without a value
	// the model sent for an injected argument. nil leaves them as sent.
	Args []byte
	// Err lists the call's violations; nil when the call is accepted.
	Err *validation.Error
}

// Answer is the tool result the model reads, in a re-ask, for one call of
// the response it is shown again ([Codec.Reask]).
type Answer struct {
	// Content is what the model reads as the call's result: its
	// violations, or why it was not run.
	Content string
	// Refused reports that the call itself was refused (its arguments
	// are invalid, it would exceed a limit), not merely left unrun beside
	// a refused sibling. Hosts with an error flag on a tool result
	// (Anthropic's is_error) set it from this.
	Refused bool
	// Args, when not nil, are the arguments to show the model in the
	// replayed call instead of those it sent: without a value for an
	// injected argument, or {} in place of arguments too large to replay.
	Args []byte
}

// MessageKind says what a [Message] of a request's transcript is to the
// limits.
type MessageKind int

const (
	// OtherMessage is a message the limits do not count: a system
	// message, a tool result, a user message the run added itself (a note
	// on calls without a function, a re-ask for a structured answer).
	OtherMessage MessageKind = iota
	// UserTurn is a message from the user that starts a run.
	UserTurn
	// ModelTurn is a message the model wrote: one model call.
	ModelTurn
)

// Message is what the limits read of one message of a request's
// transcript ([TranscriptReader]), when the context names no run or no
// thread: the run is the model turns after the last user turn.
type Message struct {
	Kind MessageKind
	// Calls are the names of the tool calls a ModelTurn holds.
	Calls []string
}

// Codec is what the stages need from a host: what a request offers and a
// response holds, how to write cleaned arguments back, how to build the
// next request of a re-ask, and a stand-in answer. An adapter (package
// middleware for langchaingo's llms.Model, package httpguard for the wire
// protocols, package mcpguard for MCP's tools/call) writes one codec of
// these five methods, and every stage of this package works on its requests
// and responses. What more a host can do, it says by implementing the
// optional interfaces the stages discover by type assertion:
// [AnswerCodec] (structured answers, required by [OutputValidation]),
// [TranscriptReader] (the limits count a conversation the context does not
// name), [MalformedReader] (calls the provider itself refused), [Advisor]
// (how the host's users commonly miswire a stage).
//
// Each stage calls Request once per logical call, Response once per
// attempt, and Accept or Reask at most once per attempt: at most three
// calls per model call.
//
// Methods must be safe for concurrent use. A Req or Resp a method is given
// belongs to the call in progress: Accept may modify resp, but Reask must
// not modify req (it is the caller's, reused for every attempt).
type Codec[Req, Resp any] interface {
	// Request returns what the stages read of req, a logical call's
	// request: the tools it offers, the model it names, its stream.
	Request(ctx context.Context, req Req) RequestInfo[Req, Resp]
	// Response returns what the stages read of resp, the answer to a
	// request of the logical call whose original request is req (a
	// codec that synthesizes call ids salts them with it): its tool
	// calls, and whether it could be read or stands in for the model's
	// answer.
	Response(req Req, resp Resp) ResponseInfo
	// Accept writes the cleaned arguments of vs, one verdict per call of
	// Response's Calls in order, into resp, so that every accessor of the
	// host's response reads them, and returns the response to hand on.
	Accept(resp Resp, vs []Verdict) (Resp, error)
	// Reask returns the request of the next attempt: req, followed by
	// resp replayed and one tool result per call of Response's Calls, in
	// order (as = answers). It builds on req, the logical call's original
	// request, never on a previous re-ask, so re-asks do not accumulate.
	Reask(req Req, resp Resp, as []Answer) (Req, error)
	// End returns a response without tool calls whose text is text,
	// standing in for the model's answer (a limit's [ExitEnd],
	// [ContinueOnFailure]); cause is the error it stands for, which
	// Response's StandIn reads back.
	End(req Req, text string, cause error) Resp
}

// RequestInfo is what the stages read of a request ([Codec.Request]).
type RequestInfo[Req, Resp any] struct {
	// Tools are the tools the request offers the model.
	Tools []Tool
	// Model is the model the request asks for; "" when it names none.
	Model string
	// Stream is the stream the request carries to its caller; nil when
	// it streams nothing.
	Stream Stream[Req, Resp]
}

// ResponseInfo is what the stages read of a response ([Codec.Response]).
type ResponseInfo struct {
	// Calls are the response's tool calls, in order. A codec that gives
	// a call an id the host did not send writes it back into the
	// response, so that every reader agrees on it.
	Calls []Call
	// Text is the text the response holds besides its tool calls; a codec
	// may leave it "" when Calls is not empty (only the text of a
	// response without calls is read: an empty answer is reported).
	Text string
	// Unreadable, when not nil, says why the response could not be read:
	// a host that can hand the stages an answer it did not read (package
	// httpguard: an upstream answer in an encoding it cannot decode, of a
	// shape it does not know, or past its bound) sets it, so that no
	// stage takes such a response for one without tool calls. Calls is
	// then nil.
	Unreadable error
	// StandIn is the cause of a response [Codec.End] made; nil for any
	// other.
	StandIn error
}

// TranscriptReader is an optional interface of a [Codec], found by type
// assertion: a host whose requests carry the conversation so far
// implements it, so that [ToolCallLimit] and [ModelCallLimit] count the
// run and thread of a call whose context names none ([WithRun],
// [WithThread]). Without it, such a call counts as a run of its own.
type TranscriptReader[Req any] interface {
	// Transcript returns what the limits read of req's messages, oldest
	// first; nil when req carries no transcript. It must be safe for
	// concurrent use.
	Transcript(ctx context.Context, req Req) []Message
}

// AnswerCodec is a [Codec] whose responses can be a final text answer that
// [OutputValidation] checks.
type AnswerCodec[Req, Resp any] interface {
	Codec[Req, Resp]
	// Answers returns each text of resp that a caller may read as the
	// answer (a response split into parts, or several choices, has
	// several), leaving out parts without text.
	Answers(resp Resp) []string
	// SetAnswers writes the cleaned answers (one per text Answers
	// returned) back, the first where a caller reading one answer
	// looks, and returns the response to hand on.
	SetAnswers(resp Resp, answers []string) (Resp, error)
	// ReaskAnswer returns the request of the next attempt: req, followed
	// by resp's text as the model's turn and feedback as the user's.
	ReaskAnswer(req Req, resp Resp, feedback string) (Req, error)
}

// Hold says what an attempt's stream holds back from the caller.
type Hold int

const (
	// HoldToolCalls passes text on as it arrives and holds the parts of
	// tool calls until the attempt is delivered: [ToolArgValidation] and
	// [ToolCallLimit].
	HoldToolCalls Hold = iota
	// HoldAll holds everything but reasoning until the attempt is
	// delivered: [OutputValidation].
	HoldAll
)

// Stream is a request's stream to its caller, for the stages that re-ask
// or retry: each attempt's output goes through a [Gate] of its own, so a
// rejected attempt never reaches the caller as if it were the answer.
type Stream[Req, Resp any] interface {
	// Attempt returns the context and request of one attempt whose
	// stream goes through the returned gate instead of straight to the
	// caller, holding back what hold says.
	Attempt(ctx context.Context, req Req, hold Hold) (context.Context, Req, Gate[Resp])
	// Watch returns the request of one attempt whose stream tells
	// whether anything reached the caller (held tool-call parts do not
	// count), and the function that tells it: [ModelRetry] does not
	// retry an attempt the caller already saw part of.
	Watch(ctx context.Context, req Req) (Req, func() bool)
}

// Gate is one attempt's stream (see [Stream]). An attempt that is not
// delivered is discarded: what its gate held never reaches the caller.
type Gate[Resp any] interface {
	// Deliver streams what the gate held for resp, the accepted
	// response (for [HoldToolCalls], its calls as accepted; for
	// [HoldAll], its answer once, or what was held as it came when resp
	// calls tools), and returns resp.
	Deliver(ctx context.Context, resp Resp) (Resp, error)
}

// Handler performs one model call of a host: the innermost calls the
// model, a middleware's calls the next handler zero or more times. It
// returns a non-nil response or an error, and must be safe for concurrent
// use.
type Handler[Req, Resp any] func(ctx context.Context, req Req) (Resp, error)

// Middleware wraps a [Handler] with behaviour of its own.
type Middleware[Req, Resp any] func(next Handler[Req, Resp]) Handler[Req, Resp]

// Chain composes middlewares into one. Nil middlewares are skipped; Chain()
// with nothing left is the identity.
//
// The first middleware is the outermost layer of the onion: it sees the
// request first and the response last.
//
//	Chain(a, b, c)(h) == a(b(c(h)))
//
//	request  ─▶ a ─▶ b ─▶ c ─▶ model
//	response ◀─ a ◀─ b ◀─ c ◀─ model
//
// Everything inside a middleware that calls next more than once runs once
// per attempt.
func Chain[Req, Resp any](mws ...Middleware[Req, Resp]) Middleware[Req, Resp] {
	kept := make([]Middleware[Req, Resp], 0, len(mws))
	for _, mw := range mws {
		if mw != nil {
			kept = append(kept, mw)
		}
	}
	return func(next Handler[Req, Resp]) Handler[Req, Resp] {
		for i := len(kept) - 1; i >= 0; i-- {
			next = kept[i](next)
		}
		return next
	}
}

// noFunction reports whether c is a call without a function (see
// [Call.Args]).
func (c Call) noFunction() bool { return c.Name == "" && c.Args == nil }
