package agent

import (
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/toolstage"
	"github.com/toolguard/toolguard/validation"
)

// Option configures an [Agent]. Options are applied in order by [New]. An option
// given an invalid value panics when it is made, with a message naming it.
type Option func(*config)

type config struct {
	middlewares   []middleware.Middleware
	systemPrompt  string
	maxIterations int
	callOptions   []llms.CallOption      // WithCallOptions
	output        *validation.Schema     // WithOutputSchema (output.go)
	checkpointer  toolstage.Checkpointer // WithCheckpointer (checkpoint.go)
}

// Defaults of the options.
const DefaultMaxIterations = 10

// WithMiddleware adds middlewares around every model call of the agent, in
// [middleware.Chain] order (the first is the outermost; Chain also gives the
// order to use). Each call of WithMiddleware appends to the middlewares of
// earlier calls; nil middlewares are skipped. The default is none: the model
// is called as is. A middleware that implements
// [guard.ObserverInstaller] also observes each run and its tool calls.
func WithMiddleware(mws ...middleware.Middleware) Option {
	return func(c *config) { c.middlewares = append(c.middlewares, mws...) }
}

// WithSystemPrompt sets the system message that starts every run. The
// default, "", sends no system message.
func WithSystemPrompt(s string) Option {
	return func(c *config) { c.systemPrompt = s }
}

// WithMaxIterations sets how many model turns a run may take (default
// [DefaultMaxIterations], 10). A turn is one model call through the middleware
// chain — which may reach the model several times when a middleware re-asks
// or retries — followed by the tool calls it asked for. A run whose model
// still calls tools after n turns ends with [ErrMaxIterations]. It panics if n
// is less than 1.
func WithMaxIterations(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("agent: WithMaxIterations(%d): a run needs at least one iteration", n))
	}
	return func(c *config) { c.maxIterations = n }
}

// WithCallOptions adds options passed on every model call of the agent —
// llms.WithModel, llms.WithTemperature, llms.WithMaxTokens,
// llms.WithStreamingFunc, … — before the agent's own llms.WithTools, so
// the model is always offered the agent's tools. Each call of
// WithCallOptions appends to earlier ones; nil options are skipped. The
// default is none: the provider's defaults. A streaming function is called
// for every model call of every run, concurrently when runs are; pass one
// per run to [Agent.RunMessages] instead to stream a single run.
func WithCallOptions(opts ...llms.CallOption) Option {
	return func(c *config) {
		for _, o := range opts {
			if o != nil {
				c.callOptions = append(c.callOptions, o)
			}
		}
	}
}

// WithOutputSchema makes a run's final answer structured data that must
// validate against schema: a *[validation.Schema] ([validation.Typed] for a
// Go struct, whose Validate method is enforced too) or a JSON Schema in any
// form [validation.Compile] takes, describing a JSON object.
//
// The agent offers the model one more tool, [OutputToolName], whose
// arguments are the answer (LangChain's ToolStrategy). A valid call of it
// ends the run: Result.Output is the answer as compact JSON ([Output]
// decodes it), and Result.Messages ends with the call, its tool message
// ([errfmt.AnswerAccepted]) and an AI message holding the JSON. The
// answer's call is a Step of the run (Tool [OutputToolName]).
//
// Answers go through the pipeline and feedback tool arguments go through:
// the schema reaches ToolArgValidation with the tools' ([guard.WithToolSchemas]),
// so an invalid answer is re-asked there, inside the model call; an answer
// nothing validated (no ToolArgValidation, or one that gave up) is checked
// by the agent and, when invalid, answered with [errfmt.Feedback] in a new
// turn. An answer in plain text is asked again ([errfmt.AnswerInText]).
// Both count against one budget of 2 re-asks per run (a re-ask is a model
// turn, inside which ToolArgValidation makes its own: at most 3×3 model
// calls for an answer it keeps failing open on); past it, and in
// every other way a run can end without a valid answer (a limit's ExitEnd
// answer, [WithMaxIterations], ModelRetry's ContinueOnFailure), Run returns
// an error wrapping [ErrNoOutput] with the partial Result, whose Output is
// "": never a text in place of the answer.
//
// The rule for an answer that arrives with other tool calls (LangChain
// #40423 loses it): the other calls run; if all of them succeed, the answer
// is taken and the run ends; if one fails (a tool error, an unknown tool,
// a denied call), the answer — given before that result was known — is
// not taken: the model reads [errfmt.AnswerNotAccepted] and answers again
// (this does not count against the re-ask budget). Only the first answer
// of a response is considered; later ones are told so. A Direct tool
// result ends the run only as a valid answer: its Content is validated
// like one, and a Content that is not ends the run with [ErrNoOutput].
//
// With [WithApproval] or [WithCheckpointer], an answer waits for its
// turn's other calls: a run that pauses for a person, or is cut off and
// resumed, takes the answer only once those calls have succeeded (the
// answer call itself never needs approval and is validated again on
// Resume).
//
// ToolCallLimit does not count the answer's calls unless it limits
// [OutputToolName] by name, so a run whose tools are used up can still
// answer. [New] panics if a tool is sent under the name [OutputToolName]:
// rename it with [Renamed] or [WithToolNames] (silently renaming the
// user's tool would change what the transcript and Steps show).
//
// WithOutputSchema panics if schema is nil, does not compile, describes
// something other than an object (tool arguments are objects: wrap a list
// or a string in an object's property), or marks a property injected
// ([validation.InjectedKeyword]: the answer is the model's, nothing is
// injected into it, so the model would be offered and set that property).
func WithOutputSchema(schema any) Option {
	if schema == nil {
		panic("agent: WithOutputSchema(nil): the schema must not be nil")
	}
	s, ok := schema.(*validation.Schema)
	if !ok || s == nil {
		var err error
		if s, err = validation.Compile(schema); err != nil {
			panic(fmt.Sprintf("agent: WithOutputSchema: the schema does not compile: %v", err))
		}
	}
	if t, ok := s.Map()["type"]; ok && t != "object" {
		panic(fmt.Sprintf("agent: WithOutputSchema: the schema's type is %v, not \"object\": the answer is the answer tool's arguments, a JSON object; wrap the value in an object's property", t))
	}
	if names := injectedProps(s); len(names) > 0 {
		panic(fmt.Sprintf("agent: WithOutputSchema: the schema marks %q injected; nothing is injected into the answer, which the model writes whole: drop the toolguard:\"inject\" tag", names))
	}
	return func(c *config) { c.output = s }
}

// WithCheckpointer keeps each thread's state in cp: after every model turn
// and every tool batch, and when a run ends or pauses for approval. With
// it, a run on a thread named in the context ([guard.WithThread])
// continues the thread's conversation (the saved transcript comes before
// the new messages; the system prompt is not added again), an [Interrupt]
// leaves its state in cp rather than carrying it, and a run cut off — its
// process died, its context was cancelled — is continued by
// [Agent.Resume] with a nil interrupt, on any replica, without running
// finished calls again.
//
// A call that ran is never forgotten, whatever ends a run inside a
// batch. After [ErrStopRun] or a tool's panic ([ToolPanicError]) the
// thread's transcript holds the stopped turn whole, every call with its
// result or what is known of it, and the next Run continues from it. After
// the context ends, the run saves the turn open, with the calls that
// finished and those that never started (on a context of its own, without
// the caller's cancellation, for at most a second: a store that cannot be
// reached by then leaves the thread as last saved, and the calls of the
// turn are then of unknown outcome); Resume shows the model their results
// and runs none of them again. A save the store does not confirm (an
// error, after which the state may have been stored; or a conflict, which
// a store client's retry of the same save can report) is settled by
// reloading the thread: each saved state carries a random stamp, so the
// run recognises its own write and goes on; a pause for approval whose
// save failed is saved again before the run returns its interrupt. A run
// whose pause cannot be confirmed so returns the store's error, and its
// interrupt, if stored, is read back with [Agent.Pending].
// [Agent.Abandon] ends a thread's unfinished run that no one will
// continue.
//
// Runs without a thread id are not saved, nor are those of a sub-agent
// called from a tool of a run on a thread, unless the tool names a thread
// of its own (see [Agent.RunMessages]). The default is none: a run's
// state lives in the run, and in the Interrupt it returns. WithCheckpointer
// panics if cp is nil.
func WithCheckpointer(cp toolstage.Checkpointer) Option {
	if cp == nil {
		panic("agent: WithCheckpointer(nil): a Checkpointer is required")
	}
	return func(c *config) { c.checkpointer = cp }
}
