package redisstore_test

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/middleware/redisstore"
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
		middleware.ModelCallLimit(middleware.WithThreadLimit(50), middleware.WithThreadStore(store)),
		middleware.ToolCallLimit(middleware.WithThreadLimit(20), middleware.WithThreadStore(store)),
		middleware.ToolArgValidation(),
		middleware.ModelRetry(),
	)

	ctx := middleware.WithThread(context.Background(), "session-42") // the conversation's id
	_, _ = llm.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hello")})
}
