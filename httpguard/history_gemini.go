package httpguard

import (
	"encoding/json"
	"fmt"
)

// The history of a Gemini request: contents, where the functionCall parts
// of a model content are answered by as many functionResponse parts in the
// next content (a user one; or in the contents up to the next model
// content, as clients that give each response a content of its own send
// them), matched by id where the call has one and otherwise by name, in
// order. Gemini refuses a turn whose responses do
// not match its calls in number, and args that are not an object.
//
// Repairs: a call without a response gets a functionResponse whose
// response is {"error": unknownOutcomeText}, in the next user content
// after its functionResponse parts (with no next user content, one holding
// it is added after the model's). A functionResponse that answers no call
// of the content before it becomes a text part holding orphanNote and its
// response as JSON, at the end of its content. A call id an earlier
// content used is renamed (id_2, …), with its response. args that are not
// an object (null and missing are fine) become {}, and the args as sent
// are kept as JSON text in the response's member "toolguard_note". Two
// calls of one content with one id, two responses to one id, and calls of
// one name without ids whose responses are fewer (which one went
// unanswered is a guess) are refused.

var _ historyProtocol = geminiWire{}

// geminiHistContent is what the history check reads of a content.
type geminiHistContent struct {
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
	parts []geminiHistPart
}

// geminiHistPart is one part: a call, a response, or another part.
type geminiHistPart struct {
	call, response bool
	key            string // the part's member: functionCall, function_call, …
	ID             *string
	Name           string
	Args           json.RawMessage // a call's
	Response       json.RawMessage // a response's
}

func readGeminiPart(b json.RawMessage) (geminiHistPart, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(b, &p); err != nil {
		return geminiHistPart{}, err
	}
	var out geminiHistPart
	for _, k := range []string{"functionCall", "function_call", "functionResponse", "function_response"} {
		v, ok := p[k]
		if !ok || string(v) == "null" {
			continue
		}
		var fn struct {
			ID       *string         `json:"id"`
			Name     string          `json:"name"`
			Args     json.RawMessage `json:"args"`
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal(v, &fn); err != nil {
			return geminiHistPart{}, err
		}
		out = geminiHistPart{key: k, ID: fn.ID, Name: fn.Name, Args: fn.Args, Response: fn.Response}
		out.call = k == "functionCall" || k == "function_call"
		out.response = !out.call
		break
	}
	return out, nil
}

func (p geminiHistPart) id() string {
	if p.ID == nil {
		return ""
	}
	return *p.ID
}

func (geminiWire) history(body []byte) ([]byte, []historyFix, error) {
	const member = "contents"
	t, err := historyOf(body, geminiSchemas, member)
	if t == nil || err != nil {
		if err != nil {
			return nil, nil, err
		}
		return body, nil, nil // no history to check
	}
	h := &geminiHistoryCheck{t: t, cs: make([]geminiHistContent, len(t.elems)), taken: map[string]bool{},
		seen: map[string]bool{}, answers: map[int]map[int]bool{}, changes: map[int]*arrayChange{}, rep: &historyReport{member: member}}
	for i, e := range t.elems {
		c := &h.cs[i]
		if err := json.Unmarshal(raw(body, e), c); err != nil {
			return nil, nil, err
		}
		c.parts = make([]geminiHistPart, len(c.Parts))
		for k, pb := range c.Parts {
			if c.parts[k], err = readGeminiPart(pb); err != nil {
				return nil, nil, err
			}
			h.taken[c.parts[k].id()] = true
		}
	}
	for i, c := range h.cs {
		if c.Role != "model" {
			continue
		}
		if err := h.turn(i); err != nil {
			return nil, nil, err
		}
	}
	if err := h.orphans(); err != nil {
		return nil, nil, err
	}
	for j := range h.cs {
		if c := h.changes[j]; c != nil {
			if err := t.rebuildArray(j, *c, "parts"); err != nil {
				return nil, nil, err
			}
		}
	}
	return t.result(), h.rep.fixes, nil
}

// geminiHistoryCheck is one history check of a Gemini request's contents.
type geminiHistoryCheck struct {
	t       *transcriptEdit
	cs      []geminiHistContent
	taken   map[string]bool      // every call and response id the contents use
	seen    map[string]bool      // the call ids of earlier contents
	answers map[int]map[int]bool // content j: its parts that answer a call
	changes map[int]*arrayChange // the contents' parts changes
	rep     *historyReport
}

// change returns the parts change of content j, made on first use.
func (h *geminiHistoryCheck) change(j int) *arrayChange {
	c := h.changes[j]
	if c == nil {
		c = &arrayChange{drop: map[int]bool{}, at: len(h.cs[j].parts)}
		for k, p := range h.cs[j].parts {
			if !p.response {
				c.at = k // after the leading functionResponse parts
				break
			}
		}
		h.changes[j] = c
	}
	return c
}

// geminiResponses are the functionResponse parts of the contents that
// follow a model content, up to the next: by id, and by name for those
// without one, in order.
type geminiResponses struct {
	byID       map[string]blockAt
	byName     map[string][]blockAt
	usedByName map[string]int // the responses by name already paired
}

// responses returns the responses to model content i.
func (h *geminiHistoryCheck) responses(i int) (*geminiResponses, error) {
	rs := &geminiResponses{byID: map[string]blockAt{}, byName: map[string][]blockAt{}, usedByName: map[string]int{}}
	for zj := i + 1; zj < len(h.cs) && h.cs[zj].Role != "model"; zj++ {
		for k, p := range h.cs[zj].parts {
			switch {
			case !p.response:
			case p.id() != "":
				if _, dup := rs.byID[p.id()]; dup {
					return nil, h.rep.refuse(zj, DuplicateID, p.id(), "two functionResponse parts answer the same call")
				}
				rs.byID[p.id()] = blockAt{zj, k}
			default:
				rs.byName[p.Name] = append(rs.byName[p.Name], blockAt{zj, k})
			}
		}
	}
	return rs, nil
}

// turn checks the functionCall parts of model content i against the
// responses after it, and puts a functionResponse for each call none
// answers into the next content.
func (h *geminiHistoryCheck) turn(i int) error {
	c := h.cs[i]
	j := i + 1
	user := j < len(h.cs) && h.cs[j].Role != "model"
	rs, err := h.responses(i)
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	callsByName := map[string]int{}
	for _, p := range c.parts {
		if !p.call {
			continue
		}
		if id := p.id(); id != "" {
			if ids[id] {
				return h.rep.refuse(i, DuplicateID, id, "two functionCall parts of one content have the same id")
			}
			ids[id] = true
		} else {
			callsByName[p.Name]++
		}
	}
	for name, n := range callsByName {
		if got := len(rs.byName[name]); n > 1 && got > 0 && got < n {
			return h.rep.refuse(i, UnansweredCall, "", fmt.Sprintf("%d calls of %s without ids have %d responses: which went unanswered is a guess", n, name, got))
		}
	}
	var missing [][]byte
	for k, p := range c.parts {
		if !p.call {
			continue
		}
		part, err := h.call(i, k, rs)
		if err != nil {
			return err
		}
		if part != nil {
			missing = append(missing, part)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if user && h.cs[j].Parts != nil {
		ch := h.change(j)
		ch.inserts = append(ch.inserts, missing...)
		return nil
	}
	m, err := marshal(struct {
		Role  string            `json:"role"`
		Parts []json.RawMessage `json:"parts"`
	}{"user", rawMessages(missing)})
	if err != nil {
		return err
	}
	h.t.after[i] = append(h.t.after[i], m)
	return nil
}

// call checks functionCall part k of content i, answered (or not) in rs:
// a reused id is renamed with its response, args that are not an object
// become {}; it returns the functionResponse to add when no response
// answers the call, nil when one does.
func (h *geminiHistoryCheck) call(i, k int, rs *geminiResponses) ([]byte, error) {
	member := h.rep.member
	p := h.cs[i].parts[k]
	id := p.id()
	var r blockAt
	answered := false
	if id != "" {
		r, answered = rs.byID[id]
	} else if n := rs.usedByName[p.Name]; n < len(rs.byName[p.Name]) {
		r, answered = rs.byName[p.Name][n], true
		rs.usedByName[p.Name]++
	}
	if answered {
		if h.answers[r.j] == nil {
			h.answers[r.j] = map[int]bool{}
		}
		h.answers[r.j][r.k] = true
	}
	if id != "" && h.seen[id] {
		newID, err := h.rename(i, k, r, answered)
		if err != nil {
			return nil, err
		}
		id = newID
	}
	if id != "" {
		h.seen[id] = true
	}
	note, err := h.objectArgs(i, k, id, r, answered)
	if err != nil {
		return nil, err
	}
	if answered {
		return nil, nil
	}
	resp := map[string]string{"error": unknownOutcomeText}
	if note != "" {
		resp["toolguard_note"] = note
	}
	type fnResponse struct {
		ID       string            `json:"id,omitempty"`
		Name     string            `json:"name"`
		Response map[string]string `json:"response"`
	}
	part, err := marshal(struct {
		FunctionResponse fnResponse `json:"functionResponse"`
	}{fnResponse{id, p.Name, resp}})
	if err != nil {
		return nil, err
	}
	h.rep.fix(&HistoryError{Index: i, Fault: UnansweredCall, CallID: id, Tool: p.Name,
		Detail: "no functionResponse answers it in the next content", Repair: "a functionResponse saying the outcome is unknown, in the next content"},
		pointer(member, i, "parts", k))
	return part, nil
}

// rename gives functionCall part k of content i, whose id an earlier
// content used, a new id, and its response (at r, when answered) with it.
func (h *geminiHistoryCheck) rename(i, k int, r blockAt, answered bool) (string, error) {
	member := h.rep.member
	p := h.cs[i].parts[k]
	newID := renamed(p.id(), h.taken)
	if err := h.t.set(i, marshalString(newID), "parts", k, p.key, "id"); err != nil {
		return "", err
	}
	paths := []string{pointer(member, i, "parts", k, p.key, "id")}
	if answered {
		rp := h.cs[r.j].parts[r.k]
		if err := h.t.set(r.j, marshalString(newID), "parts", r.k, rp.key, "id"); err != nil {
			return "", err
		}
		paths = append(paths, pointer(member, r.j, "parts", r.k, rp.key, "id"))
	}
	h.rep.fix(&HistoryError{Index: i, Fault: DuplicateID, CallID: p.id(), Tool: p.Name,
		Detail: "an earlier call has this id", Repair: fmt.Sprintf("renamed %q with its response", newID)}, paths...)
	return newID, nil
}

// objectArgs makes the args of functionCall part k of content i (its id
// as the check leaves it) {} when they are not an object, and returns the
// note that keeps them as sent, put into its response (at r, when
// answered); "" when they are an object, null or absent.
func (h *geminiHistoryCheck) objectArgs(i, k int, id string, r blockAt, answered bool) (string, error) {
	member := h.rep.member
	p := h.cs[i].parts[k]
	if len(p.Args) == 0 || string(p.Args) == "null" || isObject(p.Args) {
		return "", nil
	}
	note := argsNote(string(compact(p.Args)))
	if err := h.t.set(i, []byte("{}"), "parts", k, p.key, "args"); err != nil {
		return "", err
	}
	paths := []string{pointer(member, i, "parts", k, p.key, "args")}
	if answered {
		rp := h.cs[r.j].parts[r.k]
		if !isObject(rp.Response) {
			return "", h.rep.refuse(r.j, NonObjectArguments, id, "a call's args are not an object, and its response is not an object a note can join")
		}
		if err := h.t.set(r.j, marshalString(note), "parts", r.k, rp.key, "response", "toolguard_note"); err != nil {
			return "", err
		}
		paths = append(paths, pointer(member, r.j, "parts", r.k, rp.key, "response", "toolguard_note"))
	}
	h.rep.fix(&HistoryError{Index: i, Fault: NonObjectArguments, CallID: id, Tool: p.Name,
		Detail: "the args are not a JSON object", Repair: "args {}, the args as sent kept in a note in the response"}, paths...)
	return note, nil
}

// orphans turns each functionResponse part no call of the content before
// answers into a text part quoting it, at the end of its content.
func (h *geminiHistoryCheck) orphans() error {
	for j, c := range h.cs {
		if c.Role == "model" {
			continue
		}
		for k, p := range c.parts {
			if !p.response || h.answers[j][k] {
				continue
			}
			note, err := marshal(struct {
				Text string `json:"text"`
			}{orphanNote(p.id(), p.Name+" returned "+string(compact(p.Response)))})
			if err != nil {
				return err
			}
			ch := h.change(j)
			ch.drop[k] = true
			ch.tail = append(ch.tail, note)
			h.rep.fix(&HistoryError{Index: j, Fault: OrphanResult, CallID: p.id(), Tool: p.Name,
				Detail: "a functionResponse that answers no call of the content before it", Repair: "a text part quoting it, at the end of the content"},
				pointer(h.rep.member, j, "parts", k))
		}
	}
	return nil
}
