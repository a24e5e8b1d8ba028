package redisstore

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Checkpointer keeps an agent's thread states in Redis: an
// toolstage.Checkpointer for agent.WithCheckpointer, so that a run paused for
// approval, or cut off with its process, is resumed on any replica. It is
// plain data to it — bytes and a version per thread — so this package does
// not import agent.
//
// Each thread's state is one hash under <prefix>{<thread>}:checkpoint
// (thread escaped as for the counts), with fields v (the version) and s
// (the state). Save is one Lua script that compares v and writes both
// fields and the TTL in one step, so of two replicas saving from the same
// version exactly one succeeds; it records its reply under the request's
// id, so a copy the client sends again never turns its own write into a
// conflict (see the package documentation, "Stalls and retries"). The state expires [WithTTL] after its last
// save (24h by default): set a TTL longer than any approval may wait. A
// Redis restarted without persistence forgets the states.
//
// It is safe for concurrent use, as the client is.
type Checkpointer struct {
	s *Store // for the client, the prefix and the TTL
}

// NewCheckpointer returns a Checkpointer on client (see [New]), configured
// with the same options as a [Store]. It panics if client is nil.
func NewCheckpointer(client redis.UniversalClient, opts ...Option) *Checkpointer {
	if client == nil {
		panic("redisstore: NewCheckpointer(nil): a client is required")
	}
	return &Checkpointer{s: New(client, opts...)}
}

// Key returns the Redis key of thread's state.
func (c *Checkpointer) Key(thread string) string {
	return c.s.prefix + "{" + tag(thread) + "}:checkpoint"
}

// saveScript stores ARGV[2] in KEYS[1] as version ARGV[1]+1 if the stored
// version is ARGV[1] (0: none), with a TTL of ARGV[3] ms; 1 if it did.
// KEYS[2] is the request's record (see requestKey): a copy of a save that
// already ran returns the first run's reply, so a save never finds its own
// write and calls it a conflict.
var saveScript = redis.NewScript(`
local rec = redis.call('GET', KEYS[2])
if rec then
  return tonumber(rec)
end
local saved = 0
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v == tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'v', v + 1, 's', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  saved = 1
end
redis.call('SET', KEYS[2], saved, 'PX', ARGV[4])
return saved
`)

// Load implements toolstage.Checkpointer: the thread's state and version, nil
// and 0 when it has none (never saved, or expired). It returns when ctx is
// done, whatever the client's timeouts.
func (c *Checkpointer) Load(ctx context.Context, thread string) ([]byte, int64, error) {
	k := c.Key(thread)
	vals, err := await(ctx, func() ([]any, error) { return c.s.client.HMGet(ctx, k, "v", "s").Result() })
	if err != nil {
		return nil, 0, fmt.Errorf("redisstore: load %q: %w", k, err)
	}
	if len(vals) != 2 || vals[0] == nil {
		return nil, 0, nil
	}
	vs, ok1 := vals[0].(string)
	state, ok2 := vals[1].(string)
	v, err := strconv.ParseInt(vs, 10, 64)
	if !ok1 || !ok2 || err != nil {
		return nil, 0, fmt.Errorf("redisstore: load %q: %w", k, errBadReply)
	}
	return []byte(state), v, nil
}

// Save implements toolstage.Checkpointer in one script run, which runs once
// however often the client sends it: saved is false only when another
// save came first. It returns when ctx is done, whatever the client's
// timeouts; the error then wraps ctx's, and the state may or may not have
// been saved: Load tells which (the client sends no new copy after ctx is
// done, but one already sent may still run).
func (c *Checkpointer) Save(ctx context.Context, thread string, version int64, state []byte) (bool, error) {
	k := c.Key(thread)
	if err := ctx.Err(); err != nil { // nothing sent
		return false, fmt.Errorf("redisstore: save %q: %w", k, err)
	}
	keys := []string{k, c.s.requestKey(thread)}
	if ctx.Done() != nil {
		state = bytes.Clone(state) // the client may still send it after Save returns
	}
	n, err := await(ctx, func() (int64, error) {
		return saveScript.Run(ctx, c.s.client, keys, version, state, c.s.ttl.Milliseconds(), ReplayWindow.Milliseconds()).Int64()
	})
	if err != nil {
		return false, fmt.Errorf("redisstore: save %q: %w", k, err)
	}
	return n == 1, nil
}
