package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The headers an SDK puts its API key in: OpenAI's (and most
// OpenAI-compatible clients') Authorization: Bearer, Anthropic's
// x-api-key, Google's x-goog-api-key. Gemini's clients may send the key as
// the query parameter key instead (keyParam).
const (
	authorizationHeader = "Authorization"
	anthropicKeyHeader  = "X-Api-Key"
	googleKeyHeader     = "X-Goog-Api-Key"
	keyParam            = "key"
)

// keyPlaces is a set of the places a request carried a key in.
type keyPlaces uint8

const (
	inAuthorization keyPlaces = 1 << iota
	inAnthropicHeader
	inGoogleHeader
	inQuery
)

// client is what authentication found of a request: its tenant and where
// its key was, for rewrite to put the provider's key in the same places.
type client struct {
	tenant string
	places keyPlaces
}

type clientKey struct{}

// clientFrom returns the client authenticate found for ctx's request, or
// nil without -auth-keys.
func clientFrom(ctx context.Context) *client {
	c, _ := ctx.Value(clientKey{}).(*client)
	return c
}

// authenticate lets a request through only if it carries a key of
// -auth-keys, in any of the places an SDK puts one (Authorization:
// Bearer, x-api-key, x-goog-api-key, ?key=). Every place that holds a key
// must hold one of the file's, all of one tenant; else the request is
// answered 401 in its protocol's error shape and nothing reaches the
// upstream. The tenant and the places go into the request's context
// (clientFrom). A refusal is logged with the reason and, of a key that was
// sent, only its keyHash. Without -auth-keys it is next itself.
func (s *server) authenticate(next http.Handler) http.Handler {
	if s.cfg.keys == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys, places, ok := clientKeys(r)
		var tenant, why string
		switch {
		case !ok:
			why = "a key in a form the proxy does not read (an Authorization that is not Bearer, a header given twice)"
		case len(keys) == 0:
			why = "no key"
		default:
			ring := s.keys.Load()
			for i, key := range keys {
				t, found := ring.tenant(key)
				switch {
				case !found:
					why = "an unknown key"
				case i > 0 && t != tenant:
					why = "keys of two tenants"
				}
				if why != "" {
					break
				}
				tenant = t
			}
		}
		if why != "" {
			attrs := []slog.Attr{slog.String("path", r.URL.Path), slog.String("reason", why)}
			if len(keys) > 0 {
				hashes := make([]string, len(keys))
				for i, k := range keys {
					hashes[i] = keyHash(k)
				}
				attrs = append(attrs, slog.Any("key_hash", hashes))
			}
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "toolguard-proxy: unauthenticated request refused", attrs...)
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolguard-proxy"`)
			writeError(w, r, http.StatusUnauthorized, "authentication_error",
				"toolguard-proxy: a valid API key is required (Authorization: Bearer, x-api-key, x-goog-api-key or ?key=)")
			return
		}
		if info := infoFrom(r.Context()); info != nil {
			info.tenant = tenant
		}
		ctx := context.WithValue(r.Context(), clientKey{}, &client{tenant: tenant, places: places})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// clientKeys returns the keys r carries and where: the Bearer token of
// Authorization, x-api-key, x-goog-api-key and every key parameter of the
// query. ok is false when r carries a key the proxy cannot read as one:
// an Authorization of another scheme, a header given twice, an empty
// value, a query that does not parse.
func clientKeys(r *http.Request) (keys []string, places keyPlaces, ok bool) {
	for _, h := range []struct {
		name  string
		place keyPlaces
	}{{authorizationHeader, inAuthorization}, {anthropicKeyHeader, inAnthropicHeader}, {googleKeyHeader, inGoogleHeader}} {
		vs := r.Header.Values(h.name)
		if len(vs) == 0 {
			continue
		}
		if len(vs) > 1 {
			return nil, 0, false
		}
		v := strings.TrimSpace(vs[0])
		if h.place == inAuthorization {
			scheme, token, found := strings.Cut(v, " ")
			if !found || !strings.EqualFold(scheme, "Bearer") {
				return nil, 0, false
			}
			v = strings.TrimSpace(token)
		}
		if v == "" {
			return nil, 0, false
		}
		keys = append(keys, v)
		places |= h.place
	}
	var bad bool
	eachQueryParam(r.URL.RawQuery, func(name, value string, err error) string {
		if err != nil {
			bad = true
		} else if name == keyParam {
			keys = append(keys, value)
			places |= inQuery
			if value == "" {
				bad = true
			}
		}
		return ""
	})
	if bad {
		return nil, 0, false
	}
	return keys, places, true
}

// eachQueryParam calls f with the name and value of each parameter of
// the raw query q, unescaped, and returns q with each parameter f returns
// a replacement for ("name=value", escaped) replaced, the others kept as
// they were. Parameters are separated by '&' or ';', as servers differ on
// ';' and the key must be found wherever an upstream would read it.
func eachQueryParam(q string, f func(name, value string, err error) string) string {
	if q == "" {
		return q
	}
	var out strings.Builder
	start := 0
	for i := 0; i <= len(q); i++ {
		if i < len(q) && q[i] != '&' && q[i] != ';' {
			continue
		}
		param := q[start:i]
		if param != "" {
			rawName, rawValue, _ := strings.Cut(param, "=")
			name, err := url.QueryUnescape(rawName)
			value, verr := url.QueryUnescape(rawValue)
			if err == nil {
				err = verr
			}
			if repl := f(name, value, err); repl != "" {
				param = repl
			}
		}
		out.WriteString(param)
		if i < len(q) {
			out.WriteByte(q[i])
		}
		start = i + 1
	}
	return out.String()
}

// replaceClientKeys puts the provider's key of out's upstream (key, from
// -upstream-key-env or the route's -key-env) into the upstream request
// out wherever the client's key was (c.places) and removes every other
// credential header, so that no client key reaches the upstream.
func replaceClientKeys(out *http.Request, c *client, key string) {
	out.Header.Del(authorizationHeader)
	out.Header.Del(anthropicKeyHeader)
	out.Header.Del(googleKeyHeader)
	if c.places&inAuthorization != 0 {
		out.Header.Set(authorizationHeader, "Bearer "+key)
	}
	if c.places&inAnthropicHeader != 0 {
		out.Header.Set(anthropicKeyHeader, key)
	}
	if c.places&inGoogleHeader != 0 {
		out.Header.Set(googleKeyHeader, key)
	}
	if out.URL.RawQuery != "" {
		out.URL.RawQuery = eachQueryParam(out.URL.RawQuery, func(name, _ string, _ error) string {
			if name == keyParam {
				return keyParam + "=" + url.QueryEscape(key)
			}
			return ""
		})
	}
}

// tenantThread is the thread id the guard counts for a tenant's thread:
// the tenant's length, the tenant and the client's id, so that no thread
// id one tenant chooses can name another tenant's thread (tenant "a"'s
// "b:c" is "1:a:b:c", tenant "a:b"'s "c" would be "3:a:b:c").
func tenantThread(tenant, thread string) string {
	return strconv.Itoa(len(tenant)) + ":" + tenant + ":" + thread
}
