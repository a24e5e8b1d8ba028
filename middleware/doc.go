// Package middleware wraps any langchaingo llms.Model in a chain of
// wrap-model-call middlewares that make sure only well-formed, allowed tool
// calls leave the model:
//
//   - ToolArgValidation validates every tool call against its tool's JSON
//     Schema, strips hallucinated empty values, and re-asks the model with
//     feedback naming every violation;
//   - ModelRetry retries transient model errors (429, 5xx, timeouts) with
//     backoff, jitter and Retry-After;
//   - ToolCallLimit caps tool calls per run and per thread, for all tools or
//     one.
//
// Wrap returns an llms.Model, so the result drops into langchaingo's agents
// and chains or any loop of your own:
//
//	guarded := middleware.Wrap(llm,
//		middleware.ToolCallLimit(middleware.WithRunLimit(20)),
//		middleware.ToolArgValidation(),
//		middleware.ModelRetry(),
//	)
//
// The first middleware is the outermost: it sees the request first and the
// response last (see Chain). Everything inside a middleware that calls the
// model again runs once per attempt. The order above is the recommended one:
// the limiter counts only calls that passed validation, validation sees every
// raw response, and retry absorbs the transient errors of each attempt.
//
// Writing a middleware takes one function (see Func and Handler); events
// from the built-in ones reach WithEventHandler (LogEvents adapts slog).
// Everything in the package is safe for concurrent use. The package imports
// langchaingo's llms only: not its agents, chains or tools.
//
// For tests, package fakemodel provides a scripted tool-calling model.
package middleware
