package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/middleware"
)

// DefaultPrefix is the key prefix a [Store] uses without [WithPrefix].
const DefaultPrefix = "toolguard:"

// DefaultTTL is how long a count lives after its last change without
// [WithTTL].
const DefaultTTL = 24 * time.Hour

// Store is a [middleware.ThreadStore] in Redis; see the package
// documentation for its keys. It is safe for concurrent use, as the client
// is. Compare stores by pointer: limiters stacked on one *Store recognise
// it and count each call once.
type Store struct {
	client redis.UniversalClient
	prefix string
	ttl    time.Duration
}

var _ middleware.ThreadStore = (*Store)(nil)

// Option configures [New].
type Option func(*Store)

// WithPrefix sets the prefix of every key the store writes (default
// [DefaultPrefix], "toolguard:"). The prefix must not contain "{" or "}",
// which would move the keys' Cluster hash tag; WithPrefix panics otherwise.
func WithPrefix(p string) Option {
	if strings.ContainsAny(p, "{}") {
		panic(fmt.Sprintf("redisstore: WithPrefix(%q): the prefix must not contain '{' or '}' (they mark the Cluster hash tag)", p))
	}
	return func(s *Store) { s.prefix = p }
}

// WithTTL sets how long a count lives after its last change (default
// [DefaultTTL], 24h): a thread idle that long starts again from 0. d must be
// at least a millisecond; WithTTL panics otherwise.
func WithTTL(d time.Duration) Option {
	if d < time.Millisecond {
		panic(fmt.Sprintf("redisstore: WithTTL(%v): the TTL must be at least 1ms", d))
	}
	return func(s *Store) { s.ttl = d }
}

// New returns a store that keeps its counts through client: a *redis.Client,
// *redis.ClusterClient, a Sentinel failover client or a *redis.Ring. It
// panics if client is nil. The store does not close the client.
func New(client redis.UniversalClient, opts ...Option) *Store {
	if client == nil {
		panic("redisstore: New(nil): a client is required")
	}
	s := &Store{client: client, prefix: DefaultPrefix, ttl: DefaultTTL}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	return s
}

// reserveScript adds ARGV[1] to KEYS[1] if the sum is at most ARGV[2],
// refreshing the TTL (ARGV[3] ms), and returns {count before, 1 if added}.
var reserveScript = redis.NewScript(`
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local n, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
if count + n > limit then
  return {count, 0}
end
if n > 0 then
  redis.call('SET', KEYS[1], count + n, 'PX', ARGV[3])
end
return {count, 1}
`)

// releaseScript subtracts ARGV[1] from KEYS[1], never below 0 (a count of
// 0 is deleted), refreshing the TTL (ARGV[2] ms); it returns the new count.
var releaseScript = redis.NewScript(`
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local left = count - tonumber(ARGV[1])
if left <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('SET', KEYS[1], left, 'PX', ARGV[2])
return left
`)

// Reserve implements [middleware.ThreadStore] in one script run: it adds n
// to key's count if the result is at most limit, and returns the count
// before. An error says the server could not be reached or answered
// something unexpected; nothing was added then, or the count is unknown.
//
// Reserve returns when ctx is done, whatever the client's timeouts (see the
// package documentation, "Timeouts"): if the server's answer comes later
// and says the calls were added, they are released again.
func (s *Store) Reserve(ctx context.Context, key middleware.ThreadKey, n, limit int) (int, bool, error) {
	k := s.Key(key)
	type reply struct {
		count int
		ok    bool
		err   error
	}
	reserve := func() (r reply) {
		res, err := reserveScript.Run(ctx, s.client, []string{k}, n, limit, s.ttl.Milliseconds()).Int64Slice()
		switch {
		case err != nil:
			r.err = err
		case len(res) != 2:
			r.err = errBadReply
		default:
			r.count, r.ok = int(res[0]), res[1] == 1
		}
		return r
	}
	var r reply
	if ctx.Done() == nil { // nothing can end the wait but the client's timeouts
		r = reserve()
	} else {
		replies := make(chan reply, 1)
		go func() { replies <- reserve() }()
		select {
		case r = <-replies:
		case <-ctx.Done():
			// The caller gives up; the script may still run. Undo what it
			// adds, so a reservation nobody holds does not count.
			go func() {
				if late := <-replies; late.err == nil && late.ok && n > 0 {
					rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.releaseTimeout())
					defer cancel()
					_ = s.Release(rctx, key, n)
				}
			}()
			r.err = ctx.Err()
		}
	}
	if r.err != nil {
		return 0, false, fmt.Errorf("redisstore: reserve %d in %q: %w", n, k, r.err)
	}
	return r.count, r.ok, nil
}

// releaseTimeout bounds the release of a reservation its caller gave up on.
func (s *Store) releaseTimeout() time.Duration { return time.Minute }

var errBadReply = errors.New("the script answered an unexpected reply")

// Release implements [middleware.ThreadStore]: it subtracts n from key's
// count, never below 0, in one script run. Like Reserve, it returns when
// ctx is done; the script may still run after.
func (s *Store) Release(ctx context.Context, key middleware.ThreadKey, n int) error {
	k := s.Key(key)
	release := func() error { return releaseScript.Run(ctx, s.client, []string{k}, n, s.ttl.Milliseconds()).Err() }
	var err error
	if ctx.Done() == nil {
		err = release()
	} else {
		errs := make(chan error, 1)
		go func() { errs <- release() }()
		select {
		case err = <-errs:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		return fmt.Errorf("redisstore: release %d in %q: %w", n, k, err)
	}
	return nil
}

// Key returns the Redis key that holds key's count (see the package
// documentation), to inspect it with redis-cli or a client.
func (s *Store) Key(key middleware.ThreadKey) string {
	var kind string
	switch key.Kind {
	case middleware.CountToolCalls:
		kind = "tool"
	case middleware.CountModelCalls:
		kind = "model"
	default: // a kind of the future: never "tool" or "model"
		kind = "x" + escape(string(key.Kind))
	}
	var b strings.Builder
	b.Grow(len(s.prefix) + len(key.Thread) + len(kind) + len(key.Tool) + 4)
	b.WriteString(s.prefix)
	b.WriteByte('{')
	b.WriteString(escape(key.Thread))
	b.WriteString("}:")
	b.WriteString(kind)
	b.WriteByte(':')
	b.WriteString(key.Tool)
	return b.String()
}

var escaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D", ":", "%3A")

// escape writes "%", "{", "}" and ":" as %XX, so that the result neither
// closes a hash tag nor contains a separator.
func escape(s string) string {
	if !strings.ContainsAny(s, "%{}:") {
		return s
	}
	return escaper.Replace(s)
}
