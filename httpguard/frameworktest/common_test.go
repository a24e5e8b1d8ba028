package frameworktest

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
)

// guardedClient is an *http.Client whose transport is httpguard's:
// argument validation (events kept) over the default transport.
func guardedClient(events *[]guard.Event) *http.Client {
	var mu sync.Mutex
	return &http.Client{Transport: httpguard.New(nil,
		httpguard.ToolArgValidation(guard.WithEventHandler(func(_ context.Context, e guard.Event) {
			mu.Lock()
			*events = append(*events, e)
			mu.Unlock()
		})))}
}

// counting is a RoundTripper that counts the requests a client sends it.
type counting struct {
	n    atomic.Int64
	base http.RoundTripper
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(r)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
