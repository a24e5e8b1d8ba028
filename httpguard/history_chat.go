package httpguard

import (
	"encoding/json"
	"fmt"
)

// The history of a Chat Completions request: messages, where an assistant
// message's tool_calls are answered by the tool messages that follow it at
// once, one per call id (OpenAI refuses an assistant turn whose calls are
// not each answered there, and a tool message that answers no call of the
// assistant message before its run).
//
// Repairs: a call without a result gets a tool message whose content is
// unknownOutcomeText, after the run of tool messages that follow the call's
// assistant message. A tool message that answers no call of that message
// (or follows no assistant message) becomes a user message holding
// orphanNote and its content, after the same run: a user message may stand
// there, and every tool message of the run still answers its call. A call
// id an earlier turn used is renamed (id_2, …), with its one tool message.
// Arguments whose text is not a JSON object become "{}", and the text as
// sent goes into the call's tool message as a note (before its content).
// Two calls of one message with the same id, or two tool messages of one
// run answering the same id, are refused: which answers which is a guess.

var _ historyProtocol = chatWire{}

// chatHistMsg is what the history check reads of a Chat message.
type chatHistMsg struct {
	Role       string          `json:"role"`
	ToolCallID *string         `json:"tool_call_id"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (chatWire) history(body []byte) ([]byte, []historyFix, error) {
	const member = "messages"
	r, err := chatRequestRoot(body)
	if err != nil {
		return nil, nil, err
	}
	t, err := historyTranscript(body, r, member)
	if t == nil || err != nil {
		if err != nil {
			return nil, nil, err
		}
		return body, nil, nil // no history to check
	}
	ms := make([]chatHistMsg, len(t.elems))
	taken := map[string]bool{}
	for i, e := range t.elems {
		if err := json.Unmarshal(raw(body, e), &ms[i]); err != nil {
			return nil, nil, err
		}
		for _, c := range ms[i].ToolCalls {
			taken[c.ID] = true
		}
		if ms[i].ToolCallID != nil {
			taken[*ms[i].ToolCallID] = true
		}
	}
	rep := &historyReport{member: member}
	seen := map[string]bool{} // the call ids of earlier messages
	for i := 0; i < len(ms); {
		first := i + 1 // the run of tool messages answering message i
		if ms[i].Role == "tool" {
			first = i // a run after no assistant message: all orphans
		} else if ms[i].Role != "assistant" {
			i++
			continue
		}
		end := first
		for end < len(ms) && ms[end].Role == "tool" {
			end++
		}
		last := end - 1 // what the repairs are inserted after
		if last < i {
			last = i
		}
		// The run's results by call id.
		results := map[string]int{}
		for k := first; k < end; k++ {
			id := ""
			if ms[k].ToolCallID != nil {
				id = *ms[k].ToolCallID
			}
			if _, dup := results[id]; dup {
				return nil, nil, rep.refuse(k, DuplicateID, id, "two tool messages answer the same call")
			}
			results[id] = k
		}
		answered := map[string]bool{}
		var inserts [][]byte
		if ms[i].Role == "assistant" {
			calls := ms[i].ToolCalls
			ids := map[string]bool{}
			for _, c := range calls {
				if ids[c.ID] {
					return nil, nil, rep.refuse(i, DuplicateID, c.ID, "two calls of one message have the same id")
				}
				ids[c.ID] = true
			}
			for j, c := range calls {
				id, name := c.ID, c.Function.Name
				k, hasResult := results[id]
				answered[id] = true
				if seen[id] {
					newID := renamed(id, taken)
					if err := t.set(i, marshalString(newID), "tool_calls", j, "id"); err != nil {
						return nil, nil, err
					}
					paths := []string{pointer(member, i, "tool_calls", j, "id")}
					if hasResult {
						if err := t.set(k, marshalString(newID), "tool_call_id"); err != nil {
							return nil, nil, err
						}
						paths = append(paths, pointer(member, k, "tool_call_id"))
					}
					rep.fix(&HistoryError{Index: i, Fault: DuplicateID, CallID: id, Tool: name,
						Detail: "an earlier call has this id", Repair: fmt.Sprintf("renamed %q with its result", newID)}, paths...)
					id = newID
				}
				seen[id] = true
				note := ""
				if c.Type == "function" || c.Type == "" {
					if sent, ok := historyArgs(c.Function.Arguments); !ok {
						note = argsNote(sent)
						if err := t.set(i, marshalString("{}"), "tool_calls", j, "function", "arguments"); err != nil {
							return nil, nil, err
						}
						paths := []string{pointer(member, i, "tool_calls", j, "function", "arguments")}
						if hasResult {
							if err := chatNote(t, ms[k].Content, k, note); err != nil {
								return nil, nil, err
							}
							paths = append(paths, pointer(member, k, "content"))
						}
						rep.fix(&HistoryError{Index: i, Fault: NonObjectArguments, CallID: id, Tool: name,
							Detail: "the arguments are not a JSON object", Repair: "arguments {}, the text as sent kept in a note in the result"}, paths...)
					}
				}
				if !hasResult {
					content := unknownOutcomeText
					if note != "" {
						content += "\n\n" + note
					}
					m, err := marshal(struct {
						Role       string `json:"role"`
						ToolCallID string `json:"tool_call_id"`
						Content    string `json:"content"`
					}{"tool", id, content})
					if err != nil {
						return nil, nil, err
					}
					inserts = append(inserts, m)
					rep.fix(&HistoryError{Index: i, Fault: UnansweredCall, CallID: id, Tool: name,
						Detail: "no tool message answers it", Repair: "a tool message saying the outcome is unknown, after the turn"},
						pointer(member, i, "tool_calls", j))
				}
			}
		}
		for k := first; k < end; k++ {
			id := ""
			if ms[k].ToolCallID != nil {
				id = *ms[k].ToolCallID
			}
			if answered[id] {
				continue
			}
			text, ok := textOf(ms[k].Content, "text")
			if !ok {
				return nil, nil, rep.refuse(k, OrphanResult, id, "a tool message that answers no call, with content a note cannot hold")
			}
			m, err := marshal(struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			}{"user", orphanNote(id, text)})
			if err != nil {
				return nil, nil, err
			}
			t.drop[k] = true
			inserts = append(inserts, m)
			rep.fix(&HistoryError{Index: k, Fault: OrphanResult, CallID: id,
				Detail: "a tool message that answers no call of the assistant message before it", Repair: "a user message quoting it, after the turn"},
				pointer(member, k))
		}
		if len(inserts) > 0 {
			t.after[last] = append(t.after[last], inserts...)
		}
		i = end
	}
	return t.result(), rep.fixes, nil
}

// chatNote puts note before the content of tool message k.
func chatNote(t *transcriptEdit, content json.RawMessage, k int, note string) error {
	var s string
	switch {
	case len(content) == 0 || string(content) == "null":
		return t.set(k, marshalString(note), "content")
	case json.Unmarshal(content, &s) == nil:
		return t.set(k, marshalString(note+"\n\n"+s), "content")
	case content[0] == '[':
		part, err := marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", note})
		if err != nil {
			return err
		}
		return t.insertElems(k, 0, [][]byte{part}, "content")
	}
	return fmt.Errorf("%w: a tool message's content is neither a string nor an array", errJSON)
}
