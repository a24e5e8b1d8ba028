// Package redisstore keeps toolguard's thread counts in Redis, so that
// replicas serving the same conversations share one thread limit: a
// [guard.ThreadStore] for [guard.WithThreadStore], on
// github.com/redis/go-redis/v9.
//
//	store := redisstore.New(redis.NewClient(&redis.Options{Addr: "redis:6379"}))
//	llm := middleware.Wrap(model,
//		middleware.ModelCallLimit(guard.WithThreadLimit(50), guard.WithThreadStore(store)),
//		middleware.ToolCallLimit(guard.WithThreadLimit(20), guard.WithThreadStore(store)),
//	)
//	ctx := guard.WithThread(ctx, sessionID)
//
// Thread limits count per conversation (guard.WithThread). By default the
// counts live in each process's memory, so behind a load balancer a thread
// limit of 20 becomes 20 per replica, and a restart forgets it; this store
// keeps them in Redis, shared by every replica. Each reservation is one Lua
// script in one round trip, so concurrent replicas never pass a limit
// together: 400 concurrent calls over 4 replicas against a thread limit of
// 150 let exactly 150 out (TestConcurrentReplicasExactCount). If Redis
// cannot be reached, the model call fails with a *guard.StoreError wrapping
// the client's error, so nothing runs unlimited; guard.WithStoreFailOpen()
// lets calls through instead and reports an EventStoreError. When the
// server is back, calls recover on the same client; a server restarted
// without persistence has forgotten every count, so give Redis persistence
// (or a replica) where a restart must not reset the limits.
//
// A store of your own (SQL, etcd) is held to the same contract by package
// guard/storetest (like testing/slogtest): atomic reserve under
// concurrency, release never below zero, keys isolated by thread, tool and
// kind, errors surfaced, and with storetest.WithStall, one application of
// each command and the caller's deadline across a stall of its backend.
// Both shipped stores pass it. go run ./examples/replicas shows two
// replicas sharing one limit next to two that count alone. The tests of
// this package run against a real redis-server they start on a free
// loopback port (package redisserver); they skip without one, and
// TOOLGUARD_REQUIRE_REDIS=1 makes that a failure, as .ci/run does.
//
// # Key layout
//
// Each count is one Redis string holding a decimal integer, under
//
//	<prefix>{<thread>}:<kind>:<tool>
//
// where prefix is [WithPrefix]'s ("toolguard:" by default), thread the id
// given to [guard.WithThread], kind "tool" for ToolCallLimit's counts
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
// Counts expire 24 h after their last change ([WithTTL]); a count that
// falls to 0 is deleted. The empty thread id is written "%" (no
// escaped id is), because Redis takes empty braces for no hash tag.
//
// Beside the counts, each reserve, release and save leaves a record of its
// request for [ReplayWindow] (10 minutes), about 120 bytes, under
//
//	<prefix>{<thread>}:req:<id>
//
// where id is 128 random bits (see "Stalls and retries").
//
// # Redis Cluster
//
// [New] and [NewCheckpointer] take a redis.UniversalClient, so a
// *redis.ClusterClient serves as a *redis.Client does:
//
//	store := redisstore.New(redis.NewClusterClient(&redis.ClusterOptions{
//		Addrs: []string{"redis-0:6379", "redis-1:6379", "redis-2:6379"},
//	}))
//
// Every key of a thread (its counts, its checkpoint, its requests'
// records) carries the thread's hash tag, so the keys of each script are
// in one slot, and the script runs on the master serving it: Redis
// Cluster refuses a script whose keys span slots (CROSSSLOT). Threads
// spread over the masters. TestScriptKeysOneSlot computes the slot of
// every key each script and command is passed, with the cluster's CRC16;
// TestCluster runs the ThreadStore and Checkpointer conformance kits on a
// real cluster of three masters (redisserver.StartCluster). A master that
// cannot be reached fails the calls of the threads in its slots with a
// *guard.StoreError, as an unreachable server does, until a replica takes
// its place; the other masters go on serving their threads until the
// cluster declares itself down (cluster-node-timeout, with Redis's default
// cluster-require-full-coverage yes).
//
// # Atomicity
//
// Reserve is one Lua script, run with EVALSHA in one round trip: it reads
// the count, adds n and refreshes the TTL only if the sum stays within the
// limit, and returns the count before. Concurrent replicas therefore never
// pass a limit together. Release is a script too and never takes a count
// below 0. Each script touches the count and its request's record, two
// keys of the thread's hash slot.
//
// # Stalls and retries
//
// A client sends a command again when its reply does not come in time:
// go-redis retries a command whose read timed out, MaxRetries times (3 by
// default), and a server that was only slow, or frozen and then woken,
// runs every copy it received. None of the scripts may run twice: a
// reservation added twice blocks calls the limit allows, a release run
// twice lets calls past the limit, and a save run twice finds its own
// write and reports a conflict. So each reserve, release and save carries
// a request id the script remembers: its first run records its reply
// under <prefix>{<thread>}:req:<id>, and a copy that finds the record
// returns that reply and changes nothing. It does not matter whether a
// copy comes as EVALSHA or, after NOSCRIPT, as EVAL: the record is data,
// not script state. The store leaves the client's retries on (it does not
// own the client, and go-redis cannot turn them off per command); they
// are what lets a call survive a lost connection.
//
// A Reserve that returns an error leaves no calls counted once the server
// answers again: the store abandons the request in the background, by its
// id, so that calls it added are taken back and a copy still on its way
// adds nothing. A Release whose caller stops waiting, or that fails, goes
// on in the background, so the calls are given back, once. Both are tried
// again after a growing pause while they fail (go-redis itself does not
// retry a new connection whose handshake timed out, as it does against a
// frozen server), and given up after a minute or when the client is
// closed; a reservation nobody could take back then stays counted, which
// errs on the side of blocking, until the count's TTL.
//
// # Checkpoints
//
// [Checkpointer] keeps an agent's thread states (agent.WithCheckpointer) in
// the same server: one hash per thread under <prefix>{<thread>}:checkpoint,
// saved by a compare-and-set script, so a run paused for approval or cut
// off with its process resumes on any replica, and two replicas never both
// resume it. A save carries a request id too: retried by the client, it
// still reports its own write as saved, never as a conflict.
//
// Errors (an unreachable server, a timeout) are returned wrapped, prefixed
// "redisstore: "; the limiters then fail the model call, or let it pass
// with [guard.WithStoreFailOpen].
//
// # Timeouts
//
// Every call — Reserve, Release, Load, Save — returns when the caller's
// context is done (its deadline, or a cancellation), whatever the client's
// settings: the margin is the time it takes to notice (microseconds on
// an idle machine).
// go-redis itself ignores a context's deadline unless the client sets
// ContextTimeoutEnabled, so against a hung server (one frozen with
// SIGSTOP, say) a Load with a 300 ms deadline used to return after the
// client's 3 s ReadTimeout. The error then wraps the context's
// (errors.Is(err, context.DeadlineExceeded)). What happens to the command
// then: a reservation is abandoned and a release goes on (see "Stalls and
// retries"); a save may or may not have been stored — the client sends no
// new copy once the context is done, but one already sent may still run,
// once — and Load reads back which.
//
// The limiters release the calls that did not go out on a context whose
// deadline is [guard.ReleaseTimeout] (250 ms) away, so a failed model
// call returns at most that long after its deadline, however long the
// server is frozen.
//
// A call whose context has no deadline is bounded by the client's timeouts
// only: DialTimeout (default 5 s) to connect, then WriteTimeout and
// ReadTimeout (default 3 s each) per attempt, and MaxRetries attempts.
// Against a frozen server with go-redis's defaults each store call took
// 3.0 s per attempt, and limiters stacked with
// [guard.WithStoreFailOpen] wait that long each. Give the model calls
// a deadline, or set these timeouts to what a limiter may wait.
//
// # Cost
//
// One model call through a ToolCallLimit whose thread count is in Redis
// (a redis-server on the same machine, one round trip for the script and
// its request record) against the same call with a MemoryThreadStore,
// medians on a 2-core VM at load average 1.3–1.7:
//
//	go test -run '^$' -bench . -benchmem -count 5 ./guard/redisstore
//
//	store=memory             1.0 µs    1,304 B   17 allocs
//	store=redis              109 µs    2,069 B   39 allocs
//	store=redis,deadline      99 µs    2,262 B   43 allocs
//	64 goroutines, one store and one thread (one hot key): about 43,000 calls/s
//
// A call whose context has a deadline waits for Redis on a goroutine of its
// own, so that the deadline holds against a hung server. The round trip is
// mostly scheduling latency: on a quiet machine it is a few tens of
// microseconds. Next to a model call of hundreds of milliseconds, either
// is noise.
package redisstore
