package main

import (
	"net/http"
)

// limitInflight refuses a request when -max-inflight requests are already
// being served (streams until their end): at once, with 503 in the error
// shape of the protocol its path names and retry-after: 1, which the
// providers' SDKs honour before they retry. Without -max-inflight it is
// next itself.
func (s *server) limitInflight(next http.Handler) http.Handler {
	limit := int64(s.cfg.maxInflight)
	if limit <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.inflight.Add(1) > limit {
			s.inflight.Add(-1)
			w.Header().Set("Retry-After", "1")
			writeError(w, r, http.StatusServiceUnavailable, "proxy_overloaded",
				"toolguard-proxy: too many requests in flight (-max-inflight); retry later")
			return
		}
		defer s.inflight.Add(-1)
		next.ServeHTTP(w, r)
	})
}
