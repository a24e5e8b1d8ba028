package agent_test

import (
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/agent"
	"github.com/toolguard/toolguard/toolstage"
)

// build returns agent.New(model, toolstage.New(tools, the toolstage
// options of opts..., the agent options of opts...): for tests that build
// agents in several configurations from one list of both kinds.
func build(model llms.Model, tools []toolstage.Tool, opts ...any) *agent.Agent {
	var so []toolstage.Option
	var ao []agent.Option
	for _, o := range opts {
		switch o := o.(type) {
		case toolstage.Option:
			so = append(so, o)
		case agent.Option:
			ao = append(ao, o)
		case nil:
		default:
			panic(fmt.Sprintf("build: %T is not an option", o))
		}
	}
	return agent.New(model, toolstage.New(tools, so...), ao...)
}
