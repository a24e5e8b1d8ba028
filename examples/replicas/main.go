// Command replicas shows two replicas of a service sharing one thread limit
// through Redis: a load balancer sends the turns of one conversation to
// either replica, and the limits hold across both, where a store in each
// replica's memory would let each spend the whole budget.
//
// Each replica has its own Redis client, store and model, as separate
// processes would; they share only the redis-server. With redis-server on
// the PATH (Debian: apt-get install redis-server) the example starts one on
// a free loopback port, without persistence, and stops it at the end;
// without it, it says what it needs and exits. It runs on scripted fake
// models, offline.
//
//	go run ./examples/replicas
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

const (
	thread     = "chat-1"
	toolLimit  = 3 // search calls per conversation
	modelLimit = 5 // model calls per conversation
	turns      = 6
)

func main() {
	if err := start(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// start runs the example on a redis-server of its own, or explains why it
// cannot.
func start(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "toolguard-replicas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, stop, err := startRedis(ctx, dir)
	if errors.Is(err, errNoRedis) {
		fmt.Fprintln(out, "This example needs redis-server on the PATH (Debian: apt-get install redis-server); it starts one on a free port. Nothing to do.")
		return nil
	}
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(out, "redis-server started on %s\n", addr)
	return run(ctx, out, addr)
}

// replica is one process of the service: a store and a guarded model of
// its own.
type replica struct {
	name string
	llm  llms.Model
}

func newReplica(name string, s guard.ThreadStore) *replica {
	model := fakemodel.New()
	for range turns {
		model.Append(fakemodel.ToolCalls(fakemodel.Call("search", `{"q": "replicas"}`)))
	}
	llm := middleware.Wrap(model,
		middleware.ModelCallLimit(guard.WithThreadLimit(modelLimit), guard.WithThreadStore(s)),
		middleware.ToolCallLimit(guard.WithThreadLimit(toolLimit), guard.WithThreadStore(s),
			guard.WithExitBehavior(guard.ExitEnd)),
	)
	return &replica{name: name, llm: llm}
}

// conversation sends the turns of one thread to the replicas in turn and
// returns how many searches were let out.
func conversation(ctx context.Context, out io.Writer, replicas []*replica) (int, error) {
	ctx = guard.WithThread(ctx, thread)
	searches := 0
	for i := range turns {
		r := replicas[i%len(replicas)]
		msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("question %d", i+1))}
		resp, err := r.llm.GenerateContent(guard.WithRun(ctx), msgs)
		if err != nil {
			return 0, err
		}
		if calls := resp.Choices[0].ToolCalls; len(calls) > 0 {
			searches++
			fmt.Fprintf(out, "turn %d -> replica %s: %s runs (%d so far, limit %d)\n", i+1, r.name, calls[0].FunctionCall.Name, searches, toolLimit)
		} else {
			fmt.Fprintf(out, "turn %d -> replica %s: %s\n", i+1, r.name, resp.Choices[0].Content)
		}
	}
	return searches, nil
}

// run plays one conversation on two replicas sharing Redis, then on two
// replicas with a store each in memory.
func run(ctx context.Context, out io.Writer, addr string) error {
	// Each replica dials Redis with a client of its own.
	clientA, clientB := redis.NewClient(&redis.Options{Addr: addr}), redis.NewClient(&redis.Options{Addr: addr})
	defer clientA.Close()
	defer clientB.Close()
	const prefix = "toolguard-example:"
	a := newReplica("A", redisstore.New(clientA, redisstore.WithPrefix(prefix)))
	b := newReplica("B", redisstore.New(clientB, redisstore.WithPrefix(prefix)))
	fmt.Fprintf(out, "Two replicas, one Redis: thread %q may make %d searches and %d model calls.\n", thread, toolLimit, modelLimit)
	n, err := conversation(ctx, out, []*replica{a, b})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d searches ran. Redis holds:\n", n)
	keys, err := clientA.Keys(ctx, prefix+"*").Result()
	if err != nil {
		return err
	}
	slices.Sort(keys)
	requests := 0
	for _, k := range keys {
		if strings.Contains(k, "}:req:") {
			requests++ // each reserve's and release's record, so that a retried command runs once
			continue
		}
		fmt.Fprintf(out, "  %s = %s\n", k, clientA.Get(ctx, k).Val())
	}
	fmt.Fprintf(out, "  and %d request records (<prefix>{<thread>}:req:<id>): a command the client sends again is not applied twice\n", requests)

	c := newReplica("A", guard.NewMemoryThreadStore(100))
	d := newReplica("B", guard.NewMemoryThreadStore(100))
	fmt.Fprintln(out, "The same conversation with a store in each replica's memory:")
	if n, err = conversation(ctx, out, []*replica{c, d}); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d searches ran: each replica counted alone.\n", n)
	return nil
}
