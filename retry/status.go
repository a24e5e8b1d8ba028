package retry

import (
	"errors"
	"net/http"
	"reflect"
)

// StatusFunc finds the HTTP status of a failed call in err, for error types
// the classifier cannot recognise by itself: an adapter knows its host's
// error type and supplies a StatusFunc to [IsRetryableWith] and [Status].
// It returns ok false when err carries no status it knows, so that the
// classifier's other rules decide; a status outside 400–599 counts as none.
//
// A StatusFunc may map an error code to a status (a rate-limit code to 429,
// an authentication code to 401): the status then decides as an HTTP
// response's would. It must be safe for concurrent use.
type StatusFunc func(err error) (status int, ok bool)

// Status returns the HTTP status of the failed call that err reports, and
// false when none is found. It looks, in this order, at
//
//   - each of extract, in order (nil ones are skipped);
//   - a method in err's chain (errors.As): HTTPStatusCode() int (the AWS
//     SDK's *http.ResponseError), HTTPCode() int (Google's
//     *apierror.APIError; -1 for gRPC counts as none), StatusCode() int;
//   - an exported integer field of an error struct in err's chain, the
//     outermost first: StatusCode (openai-go's and anthropic-sdk-go's
//     *Error), HTTPStatusCode (go-openai's *APIError and *RequestError),
//     and Code on google.golang.org/genai's APIError only (see below);
//   - a status written in err's message ("status code: 429", "(HTTP Error
//     503)", "googleapi: Error 429", "StatusCode: 503", "503 Service
//     Unavailable").
//
// Only 400–599 counts as a status. A field named Code is read only on
// genai's APIError, whose documentation says it is the HTTP response's
// status: elsewhere Code is as likely a gRPC code, a provider's own error
// number or a string, and a value that happens to fall in 400–599 would be
// misread. StatusCode and HTTPStatusCode mean an HTTP status wherever Go
// code uses them (net/http's Response.StatusCode).
//
// Status is the status [IsRetryableWith] decides by when a status decides,
// and it is meant for events and logs too.
func Status(err error, extract ...StatusFunc) (int, bool) {
	if err == nil {
		return 0, false
	}
	if code, ok := typedStatus(err, extract); ok {
		return code, true
	}
	return textStatus(err.Error())
}

// typedStatus returns the status err's types carry: from extract, a
// method, or a field.
func typedStatus(err error, extract []StatusFunc) (int, bool) {
	for _, f := range extract {
		if f == nil {
			continue
		}
		if code, ok := f(err); ok && validStatus(code) {
			return code, true
		}
	}
	if code, ok := methodStatus(err); ok {
		return code, true
	}
	return fieldStatus(err)
}

// methodStatus returns the status of the first error in err's chain with a
// status method, the methods tried in turn.
func methodStatus(err error) (int, bool) {
	var aws interface{ HTTPStatusCode() int } // AWS smithy-go *http.ResponseError
	if errors.As(err, &aws) && validStatus(aws.HTTPStatusCode()) {
		return aws.HTTPStatusCode(), true
	}
	var google interface{ HTTPCode() int } // Google gax *apierror.APIError (-1 for gRPC)
	if errors.As(err, &google) && validStatus(google.HTTPCode()) {
		return google.HTTPCode(), true
	}
	var other interface{ StatusCode() int }
	if errors.As(err, &other) && validStatus(other.StatusCode()) {
		return other.StatusCode(), true
	}
	return 0, false
}

// validStatus accepts the error statuses; a 1xx–3xx on an error says
// nothing about retrying it.
func validStatus(code int) bool { return code >= 400 && code <= 599 }

// retryableStatus reports whether a response with this status is worth
// another attempt: 408, 409, 429 and every 5xx but 501 and 505.
//
// 409 is retried as openai-go and anthropic-sdk-go retry it: both APIs
// answer a request that lost a race with a concurrent one (a lock, an
// idempotency key in flight) with 409, and it clears. 425 Too Early is not:
// it asks a client to repeat a request it sent in TLS early data, which Go's
// crypto/tls never sends, and RFC 8470 §5.2 bars an intermediary from
// passing it to a client that did not, so a 425 reaching a Go client says
// something else is wrong and the same request would get it again.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return false
	}
	return code >= 500 && code <= 599
}

var (
	responseType = reflect.TypeFor[*http.Response]()
	// statusFields are the fields that hold an HTTP status on any error
	// struct.
	statusFields = []string{"StatusCode", "HTTPStatusCode"}
)

// codeIsStatus reports whether the field Code of t is documented as an HTTP
// status: genai's APIError ("Code is the HTTP response status code"; its
// message prints "Error 503, Message: …", which no text rule reads).
// googleapi's *Error needs no entry: its message says "googleapi: Error
// 503", and gax's apierror around it has HTTPCode().
func codeIsStatus(t reflect.Type) bool {
	return t.PkgPath() == "google.golang.org/genai" && t.Name() == "APIError"
}

// fieldStatus returns the status field of the outermost error struct in
// err's chain that has one.
func fieldStatus(err error) (code int, ok bool) {
	walk(err, func(e error) bool {
		code, ok = structStatus(e)
		return ok
	})
	return code, ok
}

// structStatus reads the status field of err when err is a struct or a
// pointer to one.
func structStatus(err error) (int, bool) {
	v, ok := structValue(err)
	if !ok {
		return 0, false
	}
	for _, name := range statusFields {
		if code, ok := intField(v, name); ok {
			return code, true
		}
	}
	if codeIsStatus(v.Type()) {
		return intField(v, "Code")
	}
	return 0, false
}

// structValue returns the struct err is, or points to.
func structValue(err error) (reflect.Value, bool) {
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	}
	return v, v.Kind() == reflect.Struct
}

// intField returns the exported signed integer field name of the struct v
// when it holds an error status (400–599).
func intField(v reflect.Value, name string) (int, bool) {
	sf, ok := v.Type().FieldByName(name)
	if !ok || !sf.IsExported() {
		return 0, false
	}
	f, err := v.FieldByIndexErr(sf.Index)
	if err != nil || !f.CanInt() {
		return 0, false
	}
	n := f.Int()
	if n < 400 || n > 599 {
		return 0, false
	}
	return int(n), true
}

// shouldRetryHeader returns what the x-should-retry header says of the
// response kept in the outermost error struct of err's chain that has an
// exported field Response *http.Response (openai-go's and
// anthropic-sdk-go's *Error): "true" or "false", and ok false when there is
// no such response or the header is absent or anything else.
func shouldRetryHeader(err error) (retryable, ok bool) {
	walk(err, func(e error) bool {
		v, isStruct := structValue(e)
		if !isStruct {
			return false
		}
		sf, found := v.Type().FieldByName("Response")
		if !found || !sf.IsExported() || sf.Type != responseType {
			return false
		}
		f, ferr := v.FieldByIndexErr(sf.Index)
		if ferr != nil || !f.CanInterface() {
			return false
		}
		resp, _ := f.Interface().(*http.Response)
		if resp == nil {
			return false
		}
		switch resp.Header.Get("X-Should-Retry") {
		case "true":
			retryable, ok = true, true
		case "false":
			retryable, ok = false, true
		}
		return true
	})
	return retryable, ok
}

// walk calls visit on err and the errors it wraps, depth first in the
// order errors.As visits them, until visit returns true; it reports whether
// one did.
func walk(err error, visit func(error) bool) bool {
	for err != nil {
		if visit(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if walk(e, visit) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
