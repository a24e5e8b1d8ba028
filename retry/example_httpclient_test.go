package retry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/toolguard/toolguard/retry"
)

// The client given to a provider (openai.WithHTTPClient(client)) records the
// Retry-After header of a 429 in the HeaderHint that ModelRetry puts in each
// attempt's context; the response itself is passed on unchanged.
func ExampleHTTPClient() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	client := retry.HTTPClient(nil)

	ctx, hint := retry.WithHeaderHint(context.Background()) // what ModelRetry does per attempt
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	client.CloseIdleConnections()

	wait, ok := hint.After()
	fmt.Println(resp.StatusCode, wait, ok)
	// Output: 429 3s true
}
