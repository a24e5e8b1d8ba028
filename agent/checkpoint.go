package agent

import (
	"context"

	"github.com/tmc/langchaingo/llms"
)

// session is what a run keeps of its thread's checkpoint and of the turn
// it resumes. A nil *session does nothing.
type session struct{}

func (a *Agent) openSession(context.Context) (*session, []llms.MessageContent, error) {
	return nil, nil, nil
}

func (s *session) saveTurn(context.Context, *Result, int, string, []llms.ToolCall) error { return nil }

func (s *session) saveBatch(context.Context, *Result, int) error { return nil }

func (s *session) end(_ context.Context, _ *Result, err error) error { return err }

func (a *Agent) resumeTurn(context.Context, *session, *Result) (int, bool, error) { return 0, false, nil }
