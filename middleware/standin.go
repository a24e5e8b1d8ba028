package middleware

import "github.com/tmc/langchaingo/llms"

// standInKey is the GenerationInfo key under which a middleware's stand-in
// answer records the error it stands for.
const standInKey = "toolguard_stand_in"

// standIn returns a text response without tool calls that a middleware
// returns in place of the model's (a limit's [guard.ExitEnd] answer,
// [guard.ContinueOnFailure]'s), recording err for [StandInError].
func standIn(text string, err error) *llms.ContentResponse {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		Content:        text,
		StopReason:     "stop",
		GenerationInfo: map[string]any{standInKey: err},
	}}}
}

// StandInError returns the error that resp stands for when resp is not the
// model's answer but a middleware's stand-in for one: the
// *[guard.LimitExceededError] of a limit's [guard.ExitEnd] answer, the *retry.Error
// behind [guard.ContinueOnFailure]'s. It returns nil for any other response.
//
// A loop that needs a structured answer (agent.WithOutputSchema,
// [OutputValidation]) uses it to end with that error rather than take the
// stand-in's text for an answer.
func StandInError(resp *llms.ContentResponse) error {
	if resp == nil {
		return nil
	}
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		if err, ok := c.GenerationInfo[standInKey].(error); ok && err != nil {
			return err
		}
	}
	return nil
}
