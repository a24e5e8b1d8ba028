package otelguard

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// The attributes of package otelguard's own, outside the GenAI conventions.
const (
	keyMiddleware   = attribute.Key("toolguard.middleware")    // the Event's Middleware
	keyKind         = attribute.Key("toolguard.event.kind")    // the Event's Kind
	keyAttempt      = attribute.Key("toolguard.attempt")       // the Event's Attempt
	keyPaths        = attribute.Key("toolguard.paths")         // the Event's Paths, or the violations' JSON Pointers
	keyKeywords     = attribute.Key("toolguard.keywords")      // the violations' schema keywords
	keyWait         = attribute.Key("toolguard.retry.wait")    // the retry's wait, in seconds
	keyLimitScope   = attribute.Key("toolguard.limit.scope")   // "run" or "thread"
	keyLimitMax     = attribute.Key("toolguard.limit.max")     // the limit
	keyLimitCount   = attribute.Key("toolguard.limit.count")   // calls made before the blocked response
	keyRequests     = attribute.Key("toolguard.requests")      // requests that reached the model in a call
	keyFeedback     = attribute.Key("toolguard.feedback")      // WithCaptureContent: the feedback text
	keyErrorMessage = attribute.Key("toolguard.error.message") // WithCaptureContent: the error's text
)

// errorType returns the error.type of err: the code of an *llms.Error in
// its chain (langchaingo's providers map their errors to one: "rate_limit",
// "provider_unavailable", …), "canceled" or "timeout" for a context's
// errors, "_OTHER" for errors of no type of their own (errors.New,
// fmt.Errorf), else the Go type, such as "*retry.Error". It never includes
// the error's text, which may quote the model.
func errorType(err error) string {
	var le *llms.Error
	if errors.As(err, &le) && le.Code != "" {
		return string(le.Code)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	switch t := fmt.Sprintf("%T", err); t {
	case "*errors.errorString", "*fmt.wrapError", "*fmt.wrapErrors", "*errors.joinError":
		return semconv.ErrorTypeOther.Value.AsString()
	default:
		return t
	}
}
