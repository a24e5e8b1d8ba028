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
	t, err := historyOf(body, functionSchemas, member)
	if t == nil || err != nil {
		if err != nil {
			return nil, nil, err
		}
		return body, nil, nil // no history to check
	}
	h := &chatHistoryCheck{t: t, ms: make([]chatHistMsg, len(t.elems)), taken: map[string]bool{}, seen: map[string]bool{},
		rep: &historyReport{member: member}}
	for i, e := range t.elems {
		if err := json.Unmarshal(raw(body, e), &h.ms[i]); err != nil {
			return nil, nil, err
		}
		for _, c := range h.ms[i].ToolCalls {
			h.taken[c.ID] = true
		}
		if h.ms[i].ToolCallID != nil {
			h.taken[*h.ms[i].ToolCallID] = true
		}
	}
	for i := 0; i < len(h.ms); {
		first := i + 1 // the run of tool messages answering message i
		if h.ms[i].Role == "tool" {
			first = i // a run after no assistant message: all orphans
		} else if h.ms[i].Role != "assistant" {
			i++
			continue
		}
		end := first
		for end < len(h.ms) && h.ms[end].Role == "tool" {
			end++
		}
		if err := h.turn(i, first, end); err != nil {
			return nil, nil, err
		}
		i = end
	}
	return t.result(), h.rep.fixes, nil
}

// chatHistoryCheck is one history check of a Chat request's messages.
type chatHistoryCheck struct {
	t     *transcriptEdit
	ms    []chatHistMsg
	taken map[string]bool // every call id the messages use
	seen  map[string]bool // the call ids of earlier messages
	rep   *historyReport
}

// turn checks the turn of message i (an assistant message, or a tool
// message that follows none) and the run of tool messages [first, end)
// that answers it; its repairs are inserted after the run.
func (h *chatHistoryCheck) turn(i, first, end int) error {
	last := end - 1 // what the repairs are inserted after
	if last < i {
		last = i
	}
	// The run's results by call id.
	results := map[string]int{}
	for k := first; k < end; k++ {
		id := h.resultID(k)
		if _, dup := results[id]; dup {
			return h.rep.refuse(k, DuplicateID, id, "two tool messages answer the same call")
		}
		results[id] = k
	}
	answered := map[string]bool{}
	var inserts [][]byte
	if h.ms[i].Role == "assistant" {
		var err error
		if inserts, err = h.calls(i, results, answered); err != nil {
			return err
		}
	}
	orphans, err := h.orphans(first, end, answered)
	if err != nil {
		return err
	}
	if inserts = append(inserts, orphans...); len(inserts) > 0 {
		h.t.after[last] = append(h.t.after[last], inserts...)
	}
	return nil
}

// resultID is the call id tool message k answers, "" when it names none.
func (h *chatHistoryCheck) resultID(k int) string {
	if h.ms[k].ToolCallID != nil {
		return *h.ms[k].ToolCallID
	}
	return ""
}

// calls checks the calls of assistant message i against results, the
// run's tool messages by call id, marking in answered the ids it answers;
// it returns the tool messages to insert for calls without a result.
func (h *chatHistoryCheck) calls(i int, results map[string]int, answered map[string]bool) ([][]byte, error) {
	member := h.rep.member
	calls := h.ms[i].ToolCalls
	ids := map[string]bool{}
	for _, c := range calls {
		if ids[c.ID] {
			return nil, h.rep.refuse(i, DuplicateID, c.ID, "two calls of one message have the same id")
		}
		ids[c.ID] = true
	}
	var inserts [][]byte
	for j, c := range calls {
		id, name := c.ID, c.Function.Name
		k, hasResult := results[id]
		answered[id] = true
		if h.seen[id] {
			newID, err := h.rename(i, j, k, hasResult)
			if err != nil {
				return nil, err
			}
			id = newID
		}
		h.seen[id] = true
		note := ""
		if c.Type == "function" || c.Type == "" {
			var err error
			if note, err = h.objectArgs(i, j, k, id, hasResult); err != nil {
				return nil, err
			}
		}
		if !hasResult {
			content := unknownOutcomeText
			if note != "" {
				content += "\n\n" + note
			}
			m, err := chatToolMessage(id, content)
			if err != nil {
				return nil, err
			}
			inserts = append(inserts, m)
			h.rep.fix(&HistoryError{Index: i, Fault: UnansweredCall, CallID: id, Tool: name,
				Detail: "no tool message answers it", Repair: "a tool message saying the outcome is unknown, after the turn"},
				pointer(member, i, "tool_calls", j))
		}
	}
	return inserts, nil
}

// rename gives call j of message i, whose id an earlier message used, a
// new id, and its result (tool message k, when hasResult) with it.
func (h *chatHistoryCheck) rename(i, j, k int, hasResult bool) (string, error) {
	member := h.rep.member
	c := h.ms[i].ToolCalls[j]
	id := c.ID
	newID := renamed(id, h.taken)
	if err := h.t.set(i, marshalString(newID), "tool_calls", j, "id"); err != nil {
		return "", err
	}
	paths := []string{pointer(member, i, "tool_calls", j, "id")}
	if hasResult {
		if err := h.t.set(k, marshalString(newID), "tool_call_id"); err != nil {
			return "", err
		}
		paths = append(paths, pointer(member, k, "tool_call_id"))
	}
	h.rep.fix(&HistoryError{Index: i, Fault: DuplicateID, CallID: id, Tool: c.Function.Name,
		Detail: "an earlier call has this id", Repair: fmt.Sprintf("renamed %q with its result", newID)}, paths...)
	return newID, nil
}

// objectArgs makes the arguments of function call j of message i (its id
// as the check leaves it) "{}" when their text is not a JSON object, and
// returns the note that keeps the text as sent, put into its result (tool
// message k, when hasResult); "" when the arguments are an object.
func (h *chatHistoryCheck) objectArgs(i, j, k int, id string, hasResult bool) (string, error) {
	member := h.rep.member
	c := h.ms[i].ToolCalls[j]
	sent, ok := historyArgs(c.Function.Arguments)
	if ok {
		return "", nil
	}
	note := argsNote(sent)
	if err := h.t.set(i, marshalString("{}"), "tool_calls", j, "function", "arguments"); err != nil {
		return "", err
	}
	paths := []string{pointer(member, i, "tool_calls", j, "function", "arguments")}
	if hasResult {
		if err := chatNote(h.t, h.ms[k].Content, k, note); err != nil {
			return "", err
		}
		paths = append(paths, pointer(member, k, "content"))
	}
	h.rep.fix(&HistoryError{Index: i, Fault: NonObjectArguments, CallID: id, Tool: c.Function.Name,
		Detail: "the arguments are not a JSON object", Repair: "arguments {}, the text as sent kept in a note in the result"}, paths...)
	return note, nil
}

// orphans turns each tool message of the run [first, end) that answers
// no call (none in answered) into a user message quoting it, returned to
// be inserted after the run.
func (h *chatHistoryCheck) orphans(first, end int, answered map[string]bool) ([][]byte, error) {
	var inserts [][]byte
	for k := first; k < end; k++ {
		id := h.resultID(k)
		if answered[id] {
			continue
		}
		text, ok := textOf(h.ms[k].Content, "text")
		if !ok {
			return nil, h.rep.refuse(k, OrphanResult, id, "a tool message that answers no call, with content a note cannot hold")
		}
		m, err := marshal(struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{"user", orphanNote(id, text)})
		if err != nil {
			return nil, err
		}
		h.t.drop[k] = true
		inserts = append(inserts, m)
		h.rep.fix(&HistoryError{Index: k, Fault: OrphanResult, CallID: id,
			Detail: "a tool message that answers no call of the assistant message before it", Repair: "a user message quoting it, after the turn"},
			pointer(h.rep.member, k))
	}
	return inserts, nil
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
