// Package redisstore keeps toolguard's thread counts in Redis, so that
// replicas serving the same conversations share one thread limit: a
// [middleware.ThreadStore] for [middleware.WithThreadStore], on
// github.com/redis/go-redis/v9.
//
//	store := redisstore.New(redis.NewClient(&redis.Options{Addr: "redis:6379"}))
//	llm := middleware.Wrap(model,
//		middleware.ModelCallLimit(middleware.WithThreadLimit(50), middleware.WithThreadStore(store)),
//		middleware.ToolCallLimit(middleware.WithThreadLimit(20), middleware.WithThreadStore(store)),
//	)
//	ctx := middleware.WithThread(ctx, sessionID)
//
// # Key layout
//
// Each count is one Redis string holding a decimal integer, under
//
//	<prefix>{<thread>}:<kind>:<tool>
//
// where prefix is [WithPrefix]'s ("toolguard:" by default), thread the id
// given to [middleware.WithThread], kind "tool" for ToolCallLimit's counts
// and "model" for ModelCallLimit's, and tool the limited tool's name (empty
// for a limit over every tool, and for model calls). In the thread id and
// the kind, "%", "{", "}" and ":" are written as "%25", "%7B", "%7D" and
// "%3A", so no id can end the braces early or pass for another key. The
// braces are a Redis Cluster hash tag: every key of a thread hashes to one
// slot, so the store works on a single node, with Sentinel and on Cluster
// alike. Examples:
//
//	toolguard:{chat-42}:tool:          every tool call of thread chat-42
//	toolguard:{chat-42}:tool:search    its calls of search
//	toolguard:{chat-42}:model:         its model calls
//
// A count expires [WithTTL] after its last change (24h by default); a count
// that falls to 0 is deleted.
//
// # Atomicity
//
// Reserve is one Lua script, run with EVALSHA in one round trip: it reads
// the count, adds n and refreshes the TTL only if the sum stays within the
// limit, and returns the count before. Concurrent replicas therefore never
// pass a limit together. Release is a script too and never takes a count
// below 0. The scripts touch one key each.
//
// # Checkpoints
//
// [Checkpointer] keeps an agent's thread states (agent.WithCheckpointer) in
// the same server: one hash per thread under <prefix>{<thread>}:checkpoint,
// saved by a compare-and-set script, so a run paused for approval or cut
// off with its process resumes on any replica, and two replicas never both
// resume it.
//
// Errors (an unreachable server, a timeout) are returned wrapped, prefixed
// "redisstore: "; the limiters then fail the model call, or let it pass
// with [middleware.WithStoreFailOpen].
//
// # Timeouts
//
// A call returns when the caller's context is done (its deadline, or a
// cancellation), whatever the client's settings: go-redis itself ignores a
// context's deadline unless the client sets ContextTimeoutEnabled, so
// against a hung server (one frozen with SIGSTOP, say) a call with a 1 s
// deadline used to return after the client's 3 s ReadTimeout. The error
// then wraps the context's (errors.Is(err, context.DeadlineExceeded)). The
// script may still run once the server answers; a reservation it makes
// then is released again.
//
// A call whose context has no deadline is bounded by the client's timeouts
// only: DialTimeout (default 5 s) to connect, then WriteTimeout and
// ReadTimeout (default 3 s each) per attempt. Against a frozen server with
// go-redis's defaults each store call took 3.0 s, and limiters stacked with
// [middleware.WithStoreFailOpen] wait that long each. Give the model calls
// a deadline, or set these timeouts to what a limiter may wait.
package redisstore
