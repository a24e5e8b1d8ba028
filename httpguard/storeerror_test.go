package httpguard

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/guard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// downStore is a ThreadStore whose server cannot be reached: its errors
// name the internal address and key a real client's would (go-redis:
// "dial tcp 10.0.3.7:6379: connect: connection refused").
type downStore struct{}

var errDown = errors.New(`redisstore: reserve 1 in "toolguard:{thread-7}:tool:": dial tcp 10.0.3.7:6379: connect: connection refused`)

func (downStore) Reserve(context.Context, guard.ThreadKey, int, int) (int, bool, error) {
	return 0, false, errDown
}
func (downStore) Release(context.Context, guard.ThreadKey, int) error { return errDown }
func (downStore) Count(context.Context, guard.ThreadKey) (int, error) { return 0, errDown }

// A limit store that cannot be reached is a 503 limit_store_unavailable
// whose body names no internal address, port or key: what the store's
// error says is for the program (the event, the log), not for whoever
// sent the request. Both limits, every protocol.
func TestStoreErrorLeaksNothing(t *testing.T) {
	t.Parallel()
	for _, c := range wireCases(t) {
		for _, limit := range []struct {
			name string
			mw   Middleware
		}{
			{"ToolCallLimit", ToolCallLimit(guard.WithThreadLimit(5), guard.WithThreadStore(downStore{}))},
			{"ModelCallLimit", ModelCallLimit(guard.WithThreadLimit(5), guard.WithThreadStore(downStore{}))},
		} {
			t.Run(c.name+"/"+limit.name, func(t *testing.T) {
				t.Parallel()
				srv := fp.New(fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)))
				defer srv.Close()
				var events []guard.Event
				ctx := guard.WithEvents(guard.WithThread(context.Background(), "thread-7"), func(_ context.Context, e guard.Event) {
					events = append(events, e)
				})
				ex := do(t, New(nil, limit.mw), ctx, srv.URL+c.url, c.body)
				t.Logf("%s: the client read %d %s", limit.name, ex.resp.StatusCode, ex.body)
				switch {
				case ex.resp.StatusCode == http.StatusServiceUnavailable:
					if typ, _ := errorType(t, c.w, ex.body); typ != "limit_store_unavailable" {
						t.Errorf("error type %q, want limit_store_unavailable", typ)
					}
				case c.stream && ex.resp.StatusCode == http.StatusOK:
					// Refused once the stream began: its error event.
					if !strings.Contains(string(ex.body), "limit_store_unavailable") && !strings.Contains(string(ex.body), "LIMIT_STORE_UNAVAILABLE") {
						t.Errorf("the stream ends without the store's error event")
					}
				default:
					t.Errorf("status %d, want 503 (or a stream's error event)", ex.resp.StatusCode)
				}
				for _, leak := range []string{"10.0.3.7", "6379", "dial tcp", "toolguard:{", "thread-7", "redisstore"} {
					if strings.Contains(string(ex.body), leak) {
						t.Errorf("the client's body holds %q", leak)
					}
					for k, vs := range ex.resp.Header {
						if strings.Contains(strings.Join(vs, " "), leak) {
							t.Errorf("the client's header %s holds %q", k, leak)
						}
					}
				}
			})
		}
	}
}
