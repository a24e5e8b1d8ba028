package otelguard

import (
	"context"
	"errors"
	"fmt"
	"reflect"

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

// errorType returns the error.type of err: the code of a provider's error
// in its chain (an error struct with a string field Code, as langchaingo's
// *llms.Error: "rate_limit", "provider_unavailable", …), "canceled" or
// "timeout" for a context's errors, "_OTHER" for errors of no type of their
// own (errors.New, fmt.Errorf), else the Go type, such as "*retry.Error".
// It never includes the error's text, which may quote the model.
func errorType(err error) string {
	if code := providerCode(err); code != "" {
		return code
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

// providerCode returns the first non-empty string field named Code of an
// error struct (or pointer to one) in err's chain: the low-cardinality
// code providers' error types carry (langchaingo's *llms.Error). Only
// errors whose chain can be walked are read: Unwrap() error and
// Unwrap() []error.
func providerCode(err error) string {
	for err != nil {
		v := reflect.ValueOf(err)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() == reflect.Struct {
			if f := v.FieldByName("Code"); f.IsValid() && f.Kind() == reflect.String && f.CanInterface() && f.String() != "" {
				return f.String()
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if code := providerCode(e); code != "" {
					return code
				}
			}
			return ""
		default:
			return ""
		}
	}
	return ""
}
