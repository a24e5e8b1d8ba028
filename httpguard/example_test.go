package httpguard_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/toolguard/toolguard/httpguard"
)

// A server in front of a provider (a reverse proxy over a Transport)
// answers its own errors as the provider would: here a body too large on
// Anthropic's path, which anthropic-sdk-go reads as its *Error and does
// not retry.
func ExampleErrorResponse() {
	r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
	resp := httpguard.ErrorResponse(r, http.StatusRequestEntityTooLarge, "request_too_large", "the request body is larger than 8MiB")
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, resp.Header.Get("X-Should-Retry"))
	fmt.Println(string(body))
	// Output:
	// 413 Request Entity Too Large false
	// {"type":"error","error":{"type":"request_too_large","message":"the request body is larger than 8MiB"}}
}
