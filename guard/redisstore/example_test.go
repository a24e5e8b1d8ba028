package redisstore_test

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// Every replica builds the same stack over its own client; the thread
// limits hold across all of them. (Compiled, not run: it needs a Redis at
// redis:6379. examples/replicas runs the same on a redis-server of its own.)
func ExampleNew() {
	client := redis.NewClient(&redis.Options{Addr: "redis:6379"})
	defer client.Close()
	store := redisstore.New(client) // keys under "toolguard:", kept 24h after their last change

	var model llms.Model = fakemodel.New() // your provider's model
	llm := middleware.Wrap(model,
		middleware.ModelCallLimit(guard.WithThreadLimit(50), guard.WithThreadStore(store)),
		middleware.ToolCallLimit(guard.WithThreadLimit(20), guard.WithThreadStore(store)),
		middleware.ToolArgValidation(),
		middleware.ModelRetry(),
	)

	ctx := guard.WithThread(context.Background(), "session-42") // the conversation's id
	_, _ = llm.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hello")})
}
