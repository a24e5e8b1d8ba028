package httpguard

import (
	"encoding/json"
	"fmt"
)

// The history of a Responses request: input, a list of items where a
// function_call (custom_tool_call) is answered by the
// function_call_output (custom_tool_call_output) with its call_id,
// anywhere after it. OpenAI refuses a call with no output and an output
// whose call_id no call before it has.
//
// Repairs: a call without an output gets an output whose text is
// unknownOutcomeText, after the run of call and reasoning items that holds
// the call (the model's turn). An output whose call is not before it
// becomes a user message holding orphanNote and its output, after the run
// of outputs it stands in. A call_id several calls share is renamed
// (call_id_2, …) on every call but the first, with the output that follows
// each before the next call, when each output follows one call alone;
// otherwise (two outputs after one call, an output after two calls) it is
// refused. Arguments whose text is not a JSON object become "{}", and the
// text as sent goes into the call's output as a note (before it). A
// request continuing server-side state is not checked (see HistoryCheck),
// nor one whose input refers to stored items (item_reference): the
// server reads those.

var _ historyProtocol = responsesWire{}

// responsesHistItem is what the history check reads of an input item.
type responsesHistItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	CallID    *string         `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

func (it responsesHistItem) isCall() bool {
	return it.Type == "function_call" || it.Type == "custom_tool_call"
}

func (it responsesHistItem) isOutput() bool {
	return it.Type == "function_call_output" || it.Type == "custom_tool_call_output"
}

func (it responsesHistItem) id() string {
	if it.CallID == nil {
		return ""
	}
	return *it.CallID
}

func (responsesWire) history(body []byte) ([]byte, []historyFix, error) {
	const member = "input"
	t, err := historyOf(body, responsesSchemas, member)
	if t == nil || err != nil {
		if err != nil {
			return nil, nil, err
		}
		return body, nil, nil // no history to check
	}
	h := &responsesHistoryCheck{t: t, items: make([]responsesHistItem, len(t.elems)), taken: map[string]bool{},
		ids: make([]string, len(t.elems)), callAt: map[string]int{}, output: map[string]int{}, rep: &historyReport{member: member}}
	for i, e := range t.elems {
		if err := json.Unmarshal(raw(body, e), &h.items[i]); err != nil {
			return nil, nil, err
		}
		if h.items[i].Type == "item_reference" {
			// A stored item, read by the server: the call an output
			// answers may be it.
			return body, nil, nil
		}
		if h.items[i].isCall() || h.items[i].isOutput() {
			h.taken[h.items[i].id()] = true
		}
	}
	for _, phase := range []func() error{h.renameDuplicates, h.pair, h.calls, h.orphans} {
		if err := phase(); err != nil {
			return nil, nil, err
		}
	}
	return t.result(), h.rep.fixes, nil
}

// responsesHistoryCheck is one history check of a Responses request's
// input, in phases.
type responsesHistoryCheck struct {
	t      *transcriptEdit
	items  []responsesHistItem
	taken  map[string]bool // every call_id the input uses
	ids    []string        // each call's and output's call_id once repaired
	callAt map[string]int  // the (last) call of each repaired call_id
	output map[string]int  // the output that answers each call before it
	rep    *historyReport
}

// renameDuplicates renames, in one pass, a call whose call_id an earlier
// call has, with the outputs that follow it before the id's next call.
func (h *responsesHistoryCheck) renameDuplicates() error {
	type idState struct {
		calls      int    // calls seen with the id
		lastCall   bool   // the id's last item is a call
		current    string // the id the latest call now has
		outputs    int    // outputs seen since the latest call
		twoCalls   bool   // the latest call follows a call with no output between
		renamedFix int    // the fix of the latest call's renaming
	}
	state := map[string]*idState{}
	for i, it := range h.items {
		if !it.isCall() && !it.isOutput() {
			continue
		}
		id := it.id()
		h.ids[i] = id
		st := state[id]
		if st == nil {
			st = &idState{}
			state[id] = st
		}
		if it.isCall() {
			st.twoCalls = st.calls > 0 && st.lastCall
			st.calls++
			st.lastCall, st.outputs, st.current = true, 0, id
			if st.calls == 1 {
				continue
			}
			newID := renamed(id, h.taken)
			if err := h.t.set(i, marshalString(newID), "call_id"); err != nil {
				return err
			}
			h.ids[i], st.current = newID, newID
			h.rep.fix(&HistoryError{Index: i, Fault: DuplicateID, CallID: id, Tool: it.Name,
				Detail: "an earlier call has this call_id", Repair: fmt.Sprintf("renamed %q with its output", newID)},
				pointer(h.rep.member, i, "call_id"))
			st.renamedFix = len(h.rep.fixes) - 1
			continue
		}
		st.lastCall = false
		if st.calls < 2 {
			continue // the first call's output, or an orphan: below
		}
		st.outputs++
		switch {
		case st.twoCalls:
			return h.rep.refuse(i, DuplicateID, id, "an output follows two calls with its call_id")
		case st.outputs > 1:
			return h.rep.refuse(i, DuplicateID, id, "two outputs follow one call of a call_id several calls have")
		}
		if err := h.t.set(i, marshalString(st.current), "call_id"); err != nil {
			return err
		}
		h.ids[i] = st.current
		f := &h.rep.fixes[st.renamedFix]
		f.paths = append(f.paths, pointer(h.rep.member, i, "call_id"))
	}
	return nil
}

// pair pairs calls and outputs: the output that answers each call.
func (h *responsesHistoryCheck) pair() error {
	for i, it := range h.items {
		switch {
		case it.isCall():
			h.callAt[h.ids[i]] = i
		case it.isOutput():
			if _, ok := h.callAt[h.ids[i]]; !ok {
				continue // an orphan, below
			}
			if _, dup := h.output[h.ids[i]]; dup {
				return h.rep.refuse(i, DuplicateID, h.ids[i], "two outputs answer the same call")
			}
			h.output[h.ids[i]] = i
		}
	}
	return nil
}

// calls repairs the calls: arguments that are not a JSON object, and a
// call no output answers.
func (h *responsesHistoryCheck) calls() error {
	for i, it := range h.items {
		if !it.isCall() {
			continue
		}
		id := h.ids[i]
		k, answered := h.output[id]
		note := ""
		if it.Type == "function_call" {
			if sent, ok := historyArgs(it.Arguments); !ok {
				note = argsNote(sent)
				if err := h.t.set(i, marshalString("{}"), "arguments"); err != nil {
					return err
				}
				paths := []string{pointer(h.rep.member, i, "arguments")}
				if answered {
					if err := responsesNote(h.t, h.items[k].Output, k, note); err != nil {
						return err
					}
					paths = append(paths, pointer(h.rep.member, k, "output"))
				}
				h.rep.fix(&HistoryError{Index: i, Fault: NonObjectArguments, CallID: id, Tool: it.Name,
					Detail: "the arguments are not a JSON object", Repair: "arguments {}, the text as sent kept in a note in the output"}, paths...)
			}
		}
		if answered {
			continue
		}
		text := unknownOutcomeText
		if note != "" {
			text += "\n\n" + note
		}
		typ := "function_call_output"
		if it.Type == "custom_tool_call" {
			typ = "custom_tool_call_output"
		}
		m, err := callOutput(typ, id, text)
		if err != nil {
			return err
		}
		end := i // the model's turn: the calls and reasoning after the call
		for end+1 < len(h.items) && (h.items[end+1].isCall() || h.items[end+1].Type == "reasoning") {
			end++
		}
		h.t.after[end] = append(h.t.after[end], m)
		h.rep.fix(&HistoryError{Index: i, Fault: UnansweredCall, CallID: id, Tool: it.Name,
			Detail: "no output answers it", Repair: "an output saying the outcome is unknown, after the turn"},
			pointer(h.rep.member, i))
	}
	return nil
}

// orphans turns each output whose call is not before it into a user
// message quoting it, after the outputs it stood among.
func (h *responsesHistoryCheck) orphans() error {
	for i, it := range h.items {
		if !it.isOutput() {
			continue
		}
		if _, ok := h.callAt[h.ids[i]]; ok && h.callAt[h.ids[i]] < i {
			continue
		}
		text, ok := textOf(it.Output, "input_text")
		if !ok {
			return h.rep.refuse(i, OrphanResult, h.ids[i], "an output whose call is not before it, with content a note cannot hold")
		}
		m, err := marshal(struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}{"user", orphanNote(h.ids[i], text)})
		if err != nil {
			return err
		}
		end := i
		for end+1 < len(h.items) && h.items[end+1].isOutput() {
			end++
		}
		h.t.drop[i] = true
		h.t.after[end] = append(h.t.after[end], m)
		h.rep.fix(&HistoryError{Index: i, Fault: OrphanResult, CallID: h.ids[i],
			Detail: "an output whose call is not before it", Repair: "a user message quoting it, after the outputs it stood among"},
			pointer(h.rep.member, i))
	}
	return nil
}

// responsesNote puts note before the output of item k.
func responsesNote(t *transcriptEdit, out json.RawMessage, k int, note string) error {
	var s string
	switch {
	case len(out) == 0 || string(out) == "null":
		return t.set(k, marshalString(note), "output")
	case json.Unmarshal(out, &s) == nil:
		return t.set(k, marshalString(note+"\n\n"+s), "output")
	case out[0] == '[':
		part, err := marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"input_text", note})
		if err != nil {
			return err
		}
		return t.insertElems(k, 0, [][]byte{part}, "output")
	}
	return fmt.Errorf("%w: an output is neither a string nor an array", errJSON)
}
