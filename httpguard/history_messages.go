package httpguard

import (
	"encoding/json"
	"fmt"
)

// The history of an Anthropic Messages request: messages, where the
// tool_use blocks of an assistant message are answered by tool_result
// blocks in the very next message, a user message, with the tool_result
// blocks before any other block (consecutive user messages are one turn:
// Anthropic combines them, so the results may be in any of them). Anthropic refuses a tool_use without its
// tool_result there, a tool_result whose tool_use is not in the message
// before it, tool_use ids given twice, and a tool_use whose input is not
// an object.
//
// Repairs: a tool_use without a result gets a tool_result with is_error
// true and unknownOutcomeText, in the next message after its tool_result
// blocks (a next user message whose content is a string becomes those
// blocks followed by the text as a text block; with no next user message,
// a user message holding them is added after the assistant's). A
// tool_result whose tool_use is not in the message before it becomes a
// text block holding orphanNote and its content, at the end of its
// message (text must follow the tool_result blocks); content with other
// blocks (an image) is refused. A tool_use id an earlier message used is
// renamed (id_2, …), with its tool_result. A null or missing input
// becomes {}; any other input that is not an object becomes {} and is kept
// as JSON text in a note in its tool_result (before its content). Two
// tool_use blocks of one message with the same id, or two tool_result
// blocks of one message answering the same id, are refused.

var _ historyProtocol = messagesWire{}

// messagesHistMsg is what the history check reads of a message.
type messagesHistMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	blocks  []messagesHistBlock
	array   bool // content is an array of blocks
}

type messagesHistBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

func (messagesWire) history(body []byte) ([]byte, []historyFix, error) {
	const member = "messages"
	t, err := historyOf(body, messagesSchemas, member)
	if t == nil || err != nil {
		if err != nil {
			return nil, nil, err
		}
		return body, nil, nil // no history to check
	}
	h := &messagesHistoryCheck{t: t, ms: make([]messagesHistMsg, len(t.elems)), taken: map[string]bool{},
		seen: map[string]bool{}, answers: map[int][]int{}, changes: map[int]*arrayChange{}, rep: &historyReport{member: member}}
	for i, e := range t.elems {
		m := &h.ms[i]
		if err := json.Unmarshal(raw(body, e), m); err != nil {
			return nil, nil, err
		}
		if len(m.Content) > 0 && m.Content[0] == '[' {
			if err := json.Unmarshal(m.Content, &m.blocks); err != nil {
				return nil, nil, err
			}
			m.array = true
		}
		for _, b := range m.blocks {
			h.taken[b.ID] = true
			h.taken[b.ToolUseID] = true
		}
	}
	for i, m := range h.ms {
		if m.Role != "assistant" {
			continue
		}
		if err := h.turn(i); err != nil {
			return nil, nil, err
		}
	}
	if err := h.orphans(); err != nil {
		return nil, nil, err
	}
	for j := range h.ms {
		if c := h.changes[j]; c != nil {
			if err := t.rebuildArray(j, *c, "content"); err != nil {
				return nil, nil, err
			}
		}
	}
	return t.result(), h.rep.fixes, nil
}

// messagesHistoryCheck is one history check of a Messages request's
// messages.
type messagesHistoryCheck struct {
	t       *transcriptEdit
	ms      []messagesHistMsg
	taken   map[string]bool      // every tool_use and tool_result id the messages use
	seen    map[string]bool      // the tool_use ids of earlier messages
	answers map[int][]int        // message j: its tool_result blocks that answer a call
	changes map[int]*arrayChange // the user messages' content changes
	rep     *historyReport
}

// results returns the tool_result blocks by tool_use_id of the user
// messages that follow message i (Anthropic combines consecutive user
// messages into one turn).
func (h *messagesHistoryCheck) results(i int) (map[string]blockAt, error) {
	out := map[string]blockAt{}
	for j := i + 1; j < len(h.ms) && h.ms[j].Role == "user"; j++ {
		for k, b := range h.ms[j].blocks {
			if b.Type != "tool_result" {
				continue
			}
			if _, dup := out[b.ToolUseID]; dup {
				return nil, h.rep.refuse(j, DuplicateID, b.ToolUseID, "two tool_result blocks answer the same tool_use")
			}
			out[b.ToolUseID] = blockAt{j, k}
		}
	}
	return out, nil
}

// change returns the content change of user message j, made on first use.
func (h *messagesHistoryCheck) change(j int) *arrayChange {
	c := h.changes[j]
	if c == nil {
		c = &arrayChange{drop: map[int]bool{}, at: len(h.ms[j].blocks)}
		for k, b := range h.ms[j].blocks {
			if b.Type != "tool_result" {
				c.at = k // after the leading tool_result blocks
				break
			}
		}
		h.changes[j] = c
	}
	return c
}

// turn checks the tool_use blocks of assistant message i against the
// tool_results of the user messages after it, and puts a tool_result for
// each call none answers into the next message.
func (h *messagesHistoryCheck) turn(i int) error {
	m := h.ms[i]
	ids := map[string]bool{}
	for _, b := range m.blocks {
		if b.Type != "tool_use" {
			continue
		}
		if ids[b.ID] {
			return h.rep.refuse(i, DuplicateID, b.ID, "two tool_use blocks of one message have the same id")
		}
		ids[b.ID] = true
	}
	res, err := h.results(i)
	if err != nil {
		return err
	}
	var missing [][]byte
	for k, b := range m.blocks {
		if b.Type != "tool_use" {
			continue
		}
		block, err := h.call(i, k, res)
		if err != nil {
			return err
		}
		if block != nil {
			missing = append(missing, block)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return h.insertMissing(i, missing)
}

// call checks tool_use block k of message i, answered (or not) in res: a
// reused id is renamed with its result, an input that is null or not an
// object becomes {}; it returns the tool_result to add when no result
// answers the call, nil when one does.
func (h *messagesHistoryCheck) call(i, k int, res map[string]blockAt) ([]byte, error) {
	member := h.rep.member
	b := h.ms[i].blocks[k]
	id := b.ID
	r, answered := res[id]
	if answered {
		h.answers[r.j] = append(h.answers[r.j], r.k)
	}
	if h.seen[id] {
		newID, err := h.rename(i, k, r, answered)
		if err != nil {
			return nil, err
		}
		id = newID
	}
	h.seen[id] = true
	note, err := h.input(i, k, id, r, answered)
	if err != nil {
		return nil, err
	}
	if answered {
		return nil, nil
	}
	text := unknownOutcomeText
	if note != "" {
		text += "\n\n" + note
	}
	block, err := marshal(struct {
		Type      string `json:"type"`
		ToolUseID string `json:"tool_use_id"`
		Content   string `json:"content"`
		IsError   bool   `json:"is_error"`
	}{"tool_result", id, text, true})
	if err != nil {
		return nil, err
	}
	h.rep.fix(&HistoryError{Index: i, Fault: UnansweredCall, CallID: id, Tool: b.Name,
		Detail: "no tool_result answers it in the next message", Repair: "a tool_result saying the outcome is unknown (is_error), in the next message"},
		pointer(member, i, "content", k))
	return block, nil
}

// rename gives tool_use block k of message i, whose id an earlier message
// used, a new id, and its result (at r, when answered) with it.
func (h *messagesHistoryCheck) rename(i, k int, r blockAt, answered bool) (string, error) {
	member := h.rep.member
	b := h.ms[i].blocks[k]
	newID := renamed(b.ID, h.taken)
	if err := h.t.set(i, marshalString(newID), "content", k, "id"); err != nil {
		return "", err
	}
	paths := []string{pointer(member, i, "content", k, "id")}
	if answered {
		if err := h.t.set(r.j, marshalString(newID), "content", r.k, "tool_use_id"); err != nil {
			return "", err
		}
		paths = append(paths, pointer(member, r.j, "content", r.k, "tool_use_id"))
	}
	h.rep.fix(&HistoryError{Index: i, Fault: DuplicateID, CallID: b.ID, Tool: b.Name,
		Detail: "an earlier tool_use has this id", Repair: fmt.Sprintf("renamed %q with its tool_result", newID)}, paths...)
	return newID, nil
}

// input makes the input of tool_use block k of message i (its id as the
// check leaves it) {} when it is null, missing or not an object, and
// returns the note that keeps an input that was not an object as sent,
// put into its result (at r, when answered); "" otherwise.
func (h *messagesHistoryCheck) input(i, k int, id string, r blockAt, answered bool) (string, error) {
	member := h.rep.member
	b := h.ms[i].blocks[k]
	switch {
	case len(b.Input) == 0 || string(b.Input) == "null":
		if err := h.t.set(i, []byte("{}"), "content", k, "input"); err != nil {
			return "", err
		}
		h.rep.fix(&HistoryError{Index: i, Fault: NullInput, CallID: id, Tool: b.Name,
			Detail: "the input is null or missing", Repair: "input {}"}, pointer(member, i, "content", k, "input"))
	case !isObject(b.Input):
		note := argsNote(string(compact(b.Input)))
		if err := h.t.set(i, []byte("{}"), "content", k, "input"); err != nil {
			return "", err
		}
		paths := []string{pointer(member, i, "content", k, "input")}
		if answered {
			if err := messagesNote(h.t, h.ms[r.j].blocks[r.k].Content, r.j, r.k, note); err != nil {
				return "", err
			}
			paths = append(paths, pointer(member, r.j, "content", r.k, "content"))
		}
		h.rep.fix(&HistoryError{Index: i, Fault: NonObjectArguments, CallID: id, Tool: b.Name,
			Detail: "the input is not a JSON object", Repair: "input {}, the input as sent kept in a note in the tool_result"}, paths...)
		return note, nil
	}
	return "", nil
}

// insertMissing puts the tool_results missing for assistant message i
// into the next message: among a user message's blocks, before a user
// message's text, or as a user message of their own.
func (h *messagesHistoryCheck) insertMissing(i int, missing [][]byte) error {
	j := i + 1
	switch {
	case j < len(h.ms) && h.ms[j].Role == "user" && h.ms[j].array:
		c := h.change(j)
		c.inserts = append(c.inserts, missing...)
	case j < len(h.ms) && h.ms[j].Role == "user" && json.Valid(h.ms[j].Content) && h.ms[j].Content[0] == '"':
		var s string
		if err := json.Unmarshal(h.ms[j].Content, &s); err != nil {
			return err
		}
		textBlock, err := marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", s})
		if err != nil {
			return err
		}
		blocks := append(append([][]byte{}, missing...), textBlock)
		if err := h.t.set(j, append(append([]byte{'['}, joinJSON(blocks)...), ']'), "content"); err != nil {
			return err
		}
	default:
		m, err := marshal(struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		}{"user", rawMessages(missing)})
		if err != nil {
			return err
		}
		h.t.after[i] = append(h.t.after[i], m)
	}
	return nil
}

// orphans turns each tool_result block no call of the message before
// answers into a text block quoting it, at the end of its message.
func (h *messagesHistoryCheck) orphans() error {
	for j, m := range h.ms {
		if m.Role != "user" {
			continue
		}
		answering := map[int]bool{}
		for _, k := range h.answers[j] {
			answering[k] = true
		}
		for k, b := range m.blocks {
			if b.Type != "tool_result" || answering[k] {
				continue
			}
			text, ok := textOf(b.Content, "text")
			if !ok {
				return h.rep.refuse(j, OrphanResult, b.ToolUseID, "a tool_result whose tool_use is not in the message before it, with content a note cannot hold")
			}
			note, err := marshal(struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}{"text", orphanNote(b.ToolUseID, text)})
			if err != nil {
				return err
			}
			c := h.change(j)
			c.drop[k] = true
			c.tail = append(c.tail, note)
			h.rep.fix(&HistoryError{Index: j, Fault: OrphanResult, CallID: b.ToolUseID,
				Detail: "a tool_result whose tool_use is not in the message before it", Repair: "a text block quoting it, at the end of the message"},
				pointer(h.rep.member, j, "content", k))
		}
	}
	return nil
}

// messagesNote puts note before the content of tool_result block k of
// message j.
func messagesNote(t *transcriptEdit, content json.RawMessage, j, k int, note string) error {
	var s string
	switch {
	case len(content) == 0 || string(content) == "null":
		return t.set(j, marshalString(note), "content", k, "content")
	case json.Unmarshal(content, &s) == nil:
		return t.set(j, marshalString(note+"\n\n"+s), "content", k, "content")
	case content[0] == '[':
		part, err := marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", note})
		if err != nil {
			return err
		}
		return t.insertElems(j, 0, [][]byte{part}, "content", k, "content")
	}
	return fmt.Errorf("%w: a tool_result's content is neither a string nor an array", errJSON)
}

// joinJSON joins JSON values with commas.
func joinJSON(items [][]byte) []byte {
	var out []byte
	for i, b := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return out
}
