package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
)

// DefaultPrefix is the key prefix a [Store] uses without [WithPrefix].
const DefaultPrefix = "toolguard:"

// DefaultTTL is how long a count lives after its last change without
// [WithTTL].
const DefaultTTL = 24 * time.Hour

// Store is a [guard.ThreadStore] in Redis; see the package
// documentation for its keys. It is safe for concurrent use, as the client
// is. Compare stores by pointer: limiters stacked on one *Store recognise
// it and count each call once.
type Store struct {
	client redis.UniversalClient
	prefix string
	ttl    time.Duration
}

var _ guard.ThreadStore = (*Store)(nil)

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
// KEYS[2] is the request's record (see requestKey): a copy of a request that
// already ran returns the first run's reply and adds nothing; a request
// abandoned before it ran (record "x", see abandonScript) adds nothing.
var reserveScript = redis.NewScript(`
local rec = redis.call('GET', KEYS[2])
if rec then
  local before, ok = string.match(rec, '^(%d+) (%d)')
  if before then
    return {tonumber(before), tonumber(ok)}
  end
  return {0, 0}
end
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local n, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local ok = 1
if count + n > limit then
  ok = 0
elseif n > 0 then
  redis.call('SET', KEYS[1], count + n, 'PX', ARGV[3])
end
if n > 0 then
  redis.call('SET', KEYS[2], count .. ' ' .. ok, 'PX', ARGV[4])
end
return {count, ok}
`)

// abandonScript undoes the reservation of ARGV[1] calls recorded in
// KEYS[2], whose caller stopped waiting for it: if it added them to
// KEYS[1], they are taken back (never below 0, TTL ARGV[2] ms); if it has
// not run, its record becomes "x", so that it never does. It returns 1 if
// it took calls back. Run twice, it does nothing the second time.
var abandonScript = redis.NewScript(`
local rec = redis.call('GET', KEYS[2])
if not rec then
  redis.call('SET', KEYS[2], 'x', 'PX', ARGV[3])
  return 0
end
if not string.match(rec, '^%d+ 1$') then
  return 0
end
local left = tonumber(redis.call('GET', KEYS[1]) or '0') - tonumber(ARGV[1])
if left <= 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], left, 'PX', ARGV[2])
end
redis.call('SET', KEYS[2], rec .. ' abandoned', 'PX', ARGV[3])
return 1
`)

// releaseScript subtracts ARGV[1] from KEYS[1], never below 0 (a count of
// 0 is deleted), refreshing the TTL (ARGV[2] ms); it returns the new count.
// KEYS[2] is the request's record: a copy of a release that already ran
// returns the first run's reply and subtracts nothing.
var releaseScript = redis.NewScript(`
local rec = redis.call('GET', KEYS[2])
if rec then
  return tonumber(rec)
end
local left = tonumber(redis.call('GET', KEYS[1]) or '0') - tonumber(ARGV[1])
if left <= 0 then
  redis.call('DEL', KEYS[1])
  left = 0
else
  redis.call('SET', KEYS[1], left, 'PX', ARGV[2])
end
if tonumber(ARGV[1]) > 0 then
  redis.call('SET', KEYS[2], left, 'PX', ARGV[3])
end
return left
`)

// Reserve implements [guard.ThreadStore] in one script run: it adds n
// to key's count if the result is at most limit, and returns the count
// before. The script runs once, however often the client sends it (see
// the package documentation, "Stalls and retries").
//
// Reserve returns when ctx is done, whatever the client's timeouts (see
// "Timeouts"). When it returns an error, the caller holds no calls: if
// the script runs after all, or ran but its reply was lost, the calls it
// added are taken back in the background.
func (s *Store) Reserve(ctx context.Context, key guard.ThreadKey, n, limit int) (int, bool, error) {
	k := s.Key(key)
	if err := ctx.Err(); err != nil { // nothing sent: nothing to undo
		return 0, false, fmt.Errorf("redisstore: reserve %d in %q: %w", n, k, err)
	}
	keys := []string{k, s.requestKey(key.Thread)}
	res, err := await(ctx, func() ([]int64, error) {
		return reserveScript.Run(ctx, s.client, keys, n, limit, s.ttl.Milliseconds(), ReplayWindow.Milliseconds()).Int64Slice()
	})
	if err == nil && len(res) != 2 {
		err = errBadReply
	}
	if err != nil {
		if n > 0 { // the script may have run, or may run yet: undo it
			settle(ctx, func(ctx context.Context) error {
				return abandonScript.Run(ctx, s.client, keys, n, s.ttl.Milliseconds(), ReplayWindow.Milliseconds()).Err()
			})
		}
		return 0, false, fmt.Errorf("redisstore: reserve %d in %q: %w", n, k, err)
	}
	return int(res[0]), res[1] == 1, nil
}

var errBadReply = errors.New("the script answered an unexpected reply")

// Release implements [guard.ThreadStore]: it subtracts n from key's
// count, never below 0, in one script run, which runs once however often
// it is sent. Like Reserve, it returns when ctx is done. A release whose
// caller stopped waiting, or that failed, goes on in the background (see
// the package documentation, "Stalls and retries"), so that the calls
// are still given back, once.
func (s *Store) Release(ctx context.Context, key guard.ThreadKey, n int) error {
	k := s.Key(key)
	keys := []string{k, s.requestKey(key.Thread)}
	release := func(ctx context.Context) error {
		return releaseScript.Run(ctx, s.client, keys, n, s.ttl.Milliseconds(), ReplayWindow.Milliseconds()).Err()
	}
	// The first run has a context of its own: the caller giving up does
	// not cut the client's retries short.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	_, err := await(ctx, func() (struct{}, error) {
		defer cancel()
		err := release(rctx)
		if err != nil && !errors.Is(err, redis.ErrClosed) {
			settle(ctx, release)
		}
		return struct{}{}, err
	})
	if err != nil {
		return fmt.Errorf("redisstore: release %d in %q: %w", n, k, err)
	}
	return nil
}

// requestKey returns the key of a new request's record in thread:
// <prefix>{<thread>}:req:<id>, in the thread's hash slot, with an id of
// 128 random bits. The scripts keep there the reply of the request's first
// run, for [ReplayWindow], so that a copy of the request the client sends
// again returns that reply and changes nothing.
func (s *Store) requestKey(thread string) string {
	return s.prefix + "{" + tag(thread) + "}:req:" + rand.Text()
}

// Key returns the Redis key that holds key's count (see the package
// documentation), to inspect it with redis-cli or a client.
func (s *Store) Key(key guard.ThreadKey) string {
	var kind string
	switch key.Kind {
	case guard.CountToolCalls:
		kind = "tool"
	case guard.CountModelCalls:
		kind = "model"
	default: // a kind of the future: never "tool" or "model"
		kind = "x" + escape(string(key.Kind))
	}
	var b strings.Builder
	b.Grow(len(s.prefix) + len(key.Thread) + len(kind) + len(key.Tool) + 4)
	b.WriteString(s.prefix)
	b.WriteByte('{')
	b.WriteString(tag(key.Thread))
	b.WriteString("}:")
	b.WriteString(kind)
	b.WriteByte(':')
	b.WriteString(key.Tool)
	return b.String()
}

// tag returns thread as it is written between the braces of its keys'
// Cluster hash tag: escaped, and "%" for the empty thread, whose braces
// would otherwise be empty, which Redis does not take for a hash tag (its
// keys would land in different slots). No escaped id is "%".
func tag(thread string) string {
	if thread == "" {
		return "%"
	}
	return escape(thread)
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
