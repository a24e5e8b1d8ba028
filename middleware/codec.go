package middleware

import (
	"context"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
)

// codec is the langchaingo host for package guard's stages: requests are
// a *[Request], responses an *llms.ContentResponse. It is stateless.
type codec struct{}

var _ guard.AnswerCodec[*Request, *llms.ContentResponse] = codec{}

var _ guard.TranscriptReader[*Request] = codec{}

// Request returns the function tools of req ([Request.Tools]), the model
// its options name and the caller's streaming functions, if any.
func (codec) Request(_ context.Context, req *Request) guard.RequestInfo[*Request, *llms.ContentResponse] {
	info := guard.RequestInfo[*Request, *llms.ContentResponse]{Model: req.CallOptions().Model}
	tools := req.Tools()
	info.Tools = make([]guard.Tool, 0, len(tools))
	for _, t := range tools {
		if t.Function != nil {
			info.Tools = append(info.Tools, guard.Tool{Name: t.Function.Name, Schema: t.Function.Parameters})
		}
	}
	if s := streamOf(req); s != nil {
		info.Stream = s
	}
	return info
}

// Response returns the tool calls of every choice of resp, in order (see
// [ToolCalls]): a call without an id gets a deterministic one, salted with
// the number of messages of req and written back into resp; a call without
// a function has no Name. A response without calls comes with its
// [ResponseText], and one [StandInError] reads with its cause.
func (codec) Response(req *Request, resp *llms.ContentResponse) guard.ResponseInfo {
	info := guard.ResponseInfo{Calls: guardCalls(collectToolCalls(resp, len(req.Messages))), StandIn: StandInError(resp)}
	if len(info.Calls) == 0 {
		info.Text = ResponseText(resp)
	}
	return info
}

func guardCalls(calls []toolCall) []guard.Call {
	out := make([]guard.Call, len(calls))
	for i, c := range calls {
		out[i] = guard.Call{ID: c.id}
		if c.fn != nil {
			out[i].Name, out[i].Args = c.fn.Name, []byte(c.fn.Arguments)
		}
	}
	return out
}

// Accept writes each verdict's cleaned arguments into its call's
// FunctionCall (and into the choice's legacy FuncCall when it mirrors the
// call).
func (codec) Accept(resp *llms.ContentResponse, vs []guard.Verdict) (*llms.ContentResponse, error) {
	calls := collectToolCalls(resp, 0) // the ids are in resp already
	for i, v := range vs {
		if v.Args != nil && i < len(calls) && calls[i].fn != nil {
			calls[i].setArgs(string(v.Args))
		}
	}
	return resp, nil
}

// Reask returns req's messages followed by resp replayed in the
// [ToolCallMessages] layout, each call answered by its answer, and req's
// options.
func (codec) Reask(req *Request, resp *llms.ContentResponse, as []guard.Answer) (*Request, error) {
	tcs := toToolCalls(collectToolCalls(resp, len(req.Messages)))
	results := make([]string, len(tcs))
	for i := range tcs {
		if i >= len(as) {
			break
		}
		results[i] = as[i].Content
		if as[i].Args != nil && tcs[i].FunctionCall != nil {
			fn := *tcs[i].FunctionCall
			fn.Arguments = string(as[i].Args)
			tcs[i].FunctionCall = &fn
		}
	}
	return req.with(withReplay(req.Messages, ToolCallMessages(ResponseText(resp), tcs, results))), nil
}

// End returns a one-choice text response recording cause for
// [StandInError].
func (codec) End(_ *Request, text string, cause error) *llms.ContentResponse {
	return standIn(text, cause)
}

// Transcript reads req's messages: a human message is a user turn unless
// the run added it itself (see addedByRun), an AI message a model turn
// with the names of its tool calls.
func (codec) Transcript(ctx context.Context, req *Request) []guard.Message {
	answer := guard.AnswerToolFrom(ctx)
	out := make([]guard.Message, len(req.Messages))
	for i, m := range req.Messages {
		switch m.Role {
		case llms.ChatMessageTypeHuman:
			if !addedByRun(m, answer) {
				out[i].Kind = guard.UserTurn
			}
		case llms.ChatMessageTypeAI:
			out[i].Kind = guard.ModelTurn
			for _, p := range m.Parts {
				var fn *llms.FunctionCall
				switch tc := p.(type) {
				case llms.ToolCall:
					fn = tc.FunctionCall
				case *llms.ToolCall:
					if tc != nil {
						fn = tc.FunctionCall
					}
				}
				if fn != nil {
					out[i].Calls = append(out[i].Calls, fn.Name)
				}
			}
		}
	}
	return out
}

// addedByRun reports whether m, a human message, is one a run adds to its
// own transcript — the note on tool calls without a function
// ([ToolCallMessages]), an agent's re-ask for its structured answer
// ([errfmt.AnswerInText] of answerTool) — so that a limiter reading the
// run from the transcript does not take it for the start of a new run.
func addedByRun(m llms.MessageContent, answerTool string) bool {
	if len(m.Parts) != 1 {
		return false
	}
	var text string
	switch p := m.Parts[0].(type) {
	case llms.TextContent:
		text = p.Text
	case *llms.TextContent:
		if p == nil {
			return false
		}
		text = p.Text
	default:
		return false
	}
	return isNoFunctionCalls(text) || (answerTool != "" && text == errfmt.AnswerInText(answerTool))
}

// Answers returns the text of every choice that has any: each is an
// answer some caller reads (Choices[0] by llms.GenerateFromSinglePrompt,
// chains and langchaingo's agents; each of them by a caller that asked for
// several with llms.WithN).
func (codec) Answers(resp *llms.ContentResponse) []string {
	var out []string
	for _, c := range resp.Choices {
		if c != nil && c.Content != "" {
			out = append(out, c.Content)
		}
	}
	return out
}

// SetAnswers writes the cleaned answers back into the choices Answers read
// them from; when Choices[0] has no text (Anthropic's thinking block comes
// first) the first answer moves there, since llms.GenerateFromSinglePrompt
// returns Choices[0].
func (codec) SetAnswers(resp *llms.ContentResponse, answers []string) (*llms.ContentResponse, error) {
	var first *llms.ContentChoice
	i := 0
	for _, c := range resp.Choices {
		if c == nil || c.Content == "" || i >= len(answers) {
			continue
		}
		if first == nil {
			first = c
		}
		c.Content = answers[i]
		i++
	}
	if first == nil {
		return resp, nil
	}
	c0 := resp.Choices[0]
	if c0 == first {
		return resp, nil
	}
	if c0 == nil {
		c0 = &llms.ContentChoice{}
		resp.Choices[0] = c0
	}
	c0.Content, first.Content = first.Content, ""
	return resp, nil
}

// ReaskAnswer returns req's messages followed by resp's text as an AI
// message and feedback as a human one, and req's options.
func (codec) ReaskAnswer(req *Request, resp *llms.ContentResponse, feedback string) (*Request, error) {
	return req.with(withReplay(req.Messages, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeAI, ResponseText(resp)),
		llms.TextParts(llms.ChatMessageTypeHuman, feedback),
	})), nil
}
