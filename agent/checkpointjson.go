package agent

import (
	"encoding/json"
	"fmt"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/toolstage"
)

// The state of a checkpoint or an interrupt encodes messages and tool
// calls in its own plain form: langchaingo's ToolCall.UnmarshalJSON (v0.1.14)
// drops the function of a call it decodes, so its JSON cannot carry a
// transcript across processes.

// wireCall is an llms.ToolCall as stored.
type wireCall struct {
	ID        string  `json:"id"`
	Type      string  `json:"type,omitempty"`
	Name      *string `json:"name,omitempty"` // nil: a call without a function
	Arguments string  `json:"arguments,omitempty"`
}

func toWireCalls(calls []llms.ToolCall) []wireCall {
	out := make([]wireCall, len(calls))
	for i, c := range calls {
		out[i] = wireCall{ID: c.ID, Type: c.Type}
		if c.FunctionCall != nil {
			name := c.FunctionCall.Name
			out[i].Name, out[i].Arguments = &name, c.FunctionCall.Arguments
		}
	}
	return out
}

func fromWireCalls(calls []wireCall) []llms.ToolCall {
	out := make([]llms.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = llms.ToolCall{ID: c.ID, Type: c.Type}
		if c.Name != nil {
			out[i].FunctionCall = &llms.FunctionCall{Name: *c.Name, Arguments: c.Arguments}
		}
	}
	return out
}

// wireMessage is an llms.MessageContent as stored.
type wireMessage struct {
	Role  llms.ChatMessageType `json:"role"`
	Parts []wirePart           `json:"parts"`
}

// wirePart is one part of a message: exactly one field is set.
type wirePart struct {
	Text     *string               `json:"text,omitempty"`
	Call     *wireCall             `json:"call,omitempty"`
	Response *wireResponse         `json:"response,omitempty"`
	Image    *llms.ImageURLContent `json:"image,omitempty"`
	Binary   *llms.BinaryContent   `json:"binary,omitempty"`
}

type wireResponse struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Content string `json:"content"`
}

func toWireMessages(msgs []llms.MessageContent) ([]wireMessage, error) {
	out := make([]wireMessage, len(msgs))
	for i, m := range msgs {
		out[i] = wireMessage{Role: m.Role, Parts: make([]wirePart, 0, len(m.Parts))}
		for _, p := range m.Parts {
			var w wirePart
			switch p := p.(type) {
			case llms.TextContent:
				w.Text = &p.Text
			case llms.ToolCall:
				c := toWireCalls([]llms.ToolCall{p})[0]
				w.Call = &c
			case llms.ToolCallResponse:
				w.Response = &wireResponse{CallID: p.ToolCallID, Name: p.Name, Content: p.Content}
			case llms.ImageURLContent:
				w.Image = &p
			case llms.BinaryContent:
				w.Binary = &p
			default:
				return nil, fmt.Errorf("agent: message %d: a part of type %T cannot be saved", i, p)
			}
			out[i].Parts = append(out[i].Parts, w)
		}
	}
	return out, nil
}

func fromWireMessages(msgs []wireMessage) ([]llms.MessageContent, error) {
	out := make([]llms.MessageContent, len(msgs))
	for i, m := range msgs {
		out[i] = llms.MessageContent{Role: m.Role, Parts: make([]llms.ContentPart, 0, len(m.Parts))}
		for _, w := range m.Parts {
			var p llms.ContentPart
			switch {
			case w.Text != nil:
				p = llms.TextContent{Text: *w.Text}
			case w.Call != nil:
				p = fromWireCalls([]wireCall{*w.Call})[0]
			case w.Response != nil:
				p = llms.ToolCallResponse{ToolCallID: w.Response.CallID, Name: w.Response.Name, Content: w.Response.Content}
			case w.Image != nil:
				p = *w.Image
			case w.Binary != nil:
				p = *w.Binary
			default:
				return nil, fmt.Errorf("agent: saved message %d has an empty part", i)
			}
			out[i].Parts = append(out[i].Parts, p)
		}
	}
	return out, nil
}

// wireState is a runState as stored.
type wireState struct {
	Format   int           `json:"format"`
	Messages []wireMessage `json:"messages"`
	Running  bool          `json:"running,omitempty"`
	Turns    int           `json:"turns,omitempty"`
	Turn     *wireTurn     `json:"turn,omitempty"`
	Stamp    string        `json:"stamp,omitempty"`
}

type wireTurn struct {
	Number    int                  `json:"number"`
	Text      string               `json:"text,omitempty"`
	Calls     []wireCall           `json:"calls"`
	Finished  []doneCall           `json:"finished,omitempty"`
	Interrupt string               `json:"interrupt,omitempty"`
	Waiting   []int                `json:"waiting,omitempty"`
	Paused    *toolstage.Interrupt `json:"paused,omitempty"`
}

// MarshalJSON encodes the state in its stored form.
func (st runState) MarshalJSON() ([]byte, error) {
	msgs, err := toWireMessages(st.Messages)
	if err != nil {
		return nil, err
	}
	w := wireState{Format: st.Format, Messages: msgs, Running: st.Running, Turns: st.Turns, Stamp: st.Stamp}
	if t := st.Turn; t != nil {
		w.Turn = &wireTurn{Number: t.Number, Text: t.Text, Calls: toWireCalls(t.Calls), Finished: t.Finished,
			Interrupt: t.Interrupt, Waiting: t.Waiting, Paused: t.Paused}
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes the stored form.
func (st *runState) UnmarshalJSON(data []byte) error {
	var w wireState
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	msgs, err := fromWireMessages(w.Messages)
	if err != nil {
		return err
	}
	*st = runState{Format: w.Format, Messages: msgs, Running: w.Running, Turns: w.Turns, Stamp: w.Stamp}
	if t := w.Turn; t != nil {
		st.Turn = &openTurn{Number: t.Number, Text: t.Text, Calls: fromWireCalls(t.Calls), Finished: t.Finished,
			Interrupt: t.Interrupt, Waiting: t.Waiting, Paused: t.Paused}
	}
	return nil
}
