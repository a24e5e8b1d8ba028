package middleware_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/middleware"
	"github.com/toolguard/toolguard/middleware/fakemodel"
	"github.com/toolguard/toolguard/repair"
)

// A model in JSON mode answers in a code fence (repaired), then with a
// label outside the enum (re-asked), for a caller without the agent.
func ExampleOutputValidation() {
	schema := `{"type": "object", "properties": {"label": {"enum": ["spam", "ham"]}}, "required": ["label"]}`
	llm := middleware.Wrap(fakemodel.New(
		fakemodel.Text("```json\n{\"label\": \"maybe\"}\n```"),
		fakemodel.Text("```json\n{\"label\": \"spam\"}\n```"),
	), middleware.OutputValidation(schema, guard.WithRepair(repair.Default())))

	resp, err := llm.GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Classify: WIN A PRIZE")},
		llms.WithJSONMode())
	if errors.Is(err, guard.ErrNoOutput) {
		fmt.Println("no valid answer:", err)
		return
	}
	fmt.Println(middleware.ResponseText(resp), err)
	// Output:
	// {"label":"spam"} <nil>
}
