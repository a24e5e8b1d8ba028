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
	cs := make([]geminiHistContent, len(t.elems))
	taken := map[string]bool{}
	for i, e := range t.elems {
		c := &cs[i]
		if err := json.Unmarshal(raw(body, e), c); err != nil {
			return nil, nil, err
		}
		c.parts = make([]geminiHistPart, len(c.Parts))
		for k, pb := range c.Parts {
			if c.parts[k], err = readGeminiPart(pb); err != nil {
				return nil, nil, err
			}
			taken[c.parts[k].id()] = true
		}
	}
	rep := &historyReport{member: member}
	changes := map[int]*arrayChange{}
	change := func(j int) *arrayChange {
		c := changes[j]
		if c == nil {
			c = &arrayChange{drop: map[int]bool{}, at: len(cs[j].parts)}
			for k, p := range cs[j].parts {
				if !p.response {
					c.at = k // after the leading functionResponse parts
					break
				}
			}
			changes[j] = c
		}
		return c
	}
	seen := map[string]bool{}
	answers := map[int]map[int]bool{} // content j: its parts that answer a call
	for i, c := range cs {
		if c.Role != "model" {
			continue
		}
		j := i + 1
		user := j < len(cs) && cs[j].Role != "model"
		// The responses of the contents up to the next model content: by
		// id, and by name for those without one, in order.
		byID := map[string]blockAt{}
		byName := map[string][]blockAt{}
		for zj := j; zj < len(cs) && cs[zj].Role != "model"; zj++ {
			for k, p := range cs[zj].parts {
				switch {
				case !p.response:
				case p.id() != "":
					if _, dup := byID[p.id()]; dup {
						return nil, nil, rep.refuse(zj, DuplicateID, p.id(), "two functionResponse parts answer the same call")
					}
					byID[p.id()] = blockAt{zj, k}
				default:
					byName[p.Name] = append(byName[p.Name], blockAt{zj, k})
				}
			}
		}
		ids := map[string]bool{}
		callsByName := map[string]int{}
		for _, p := range c.parts {
			if !p.call {
				continue
			}
			if id := p.id(); id != "" {
				if ids[id] {
					return nil, nil, rep.refuse(i, DuplicateID, id, "two functionCall parts of one content have the same id")
				}
				ids[id] = true
			} else {
				callsByName[p.Name]++
			}
		}
		for name, n := range callsByName {
			if got := len(byName[name]); n > 1 && got > 0 && got < n {
				return nil, nil, rep.refuse(i, UnansweredCall, "", fmt.Sprintf("%d calls of %s without ids have %d responses: which went unanswered is a guess", n, name, got))
			}
		}
		usedByName := map[string]int{}
		var missing [][]byte
		for k, p := range c.parts {
			if !p.call {
				continue
			}
			id := p.id()
			var r blockAt
			answered := false
			if id != "" {
				r, answered = byID[id]
			} else if n := usedByName[p.Name]; n < len(byName[p.Name]) {
				r, answered = byName[p.Name][n], true
				usedByName[p.Name]++
			}
			if answered {
				if answers[r.j] == nil {
					answers[r.j] = map[int]bool{}
				}
				answers[r.j][r.k] = true
			}
			if id != "" && seen[id] {
				newID := renamed(id, taken)
				if err := t.set(i, marshalString(newID), "parts", k, p.key, "id"); err != nil {
					return nil, nil, err
				}
				paths := []string{pointer(member, i, "parts", k, p.key, "id")}
				if answered {
					rp := cs[r.j].parts[r.k]
					if err := t.set(r.j, marshalString(newID), "parts", r.k, rp.key, "id"); err != nil {
						return nil, nil, err
					}
					paths = append(paths, pointer(member, r.j, "parts", r.k, rp.key, "id"))
				}
				rep.fix(&HistoryError{Index: i, Fault: DuplicateID, CallID: id, Tool: p.Name,
					Detail: "an earlier call has this id", Repair: fmt.Sprintf("renamed %q with its response", newID)}, paths...)
				id = newID
			}
			if id != "" {
				seen[id] = true
			}
			note := ""
			if len(p.Args) > 0 && string(p.Args) != "null" && !isObject(p.Args) {
				note = argsNote(string(compact(p.Args)))
				if err := t.set(i, []byte("{}"), "parts", k, p.key, "args"); err != nil {
					return nil, nil, err
				}
				paths := []string{pointer(member, i, "parts", k, p.key, "args")}
				if answered {
					rp := cs[r.j].parts[r.k]
					if !isObject(rp.Response) {
						return nil, nil, rep.refuse(r.j, NonObjectArguments, id, "a call's args are not an object, and its response is not an object a note can join")
					}
					if err := t.set(r.j, marshalString(note), "parts", r.k, rp.key, "response", "toolguard_note"); err != nil {
						return nil, nil, err
					}
					paths = append(paths, pointer(member, r.j, "parts", r.k, rp.key, "response", "toolguard_note"))
				}
				rep.fix(&HistoryError{Index: i, Fault: NonObjectArguments, CallID: id, Tool: p.Name,
					Detail: "the args are not a JSON object", Repair: "args {}, the args as sent kept in a note in the response"}, paths...)
			}
			if answered {
				continue
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
				return nil, nil, err
			}
			missing = append(missing, part)
			rep.fix(&HistoryError{Index: i, Fault: UnansweredCall, CallID: id, Tool: p.Name,
				Detail: "no functionResponse answers it in the next content", Repair: "a functionResponse saying the outcome is unknown, in the next content"},
				pointer(member, i, "parts", k))
		}
		if len(missing) == 0 {
			continue
		}
		if user && cs[j].Parts != nil {
			ch := change(j)
			ch.inserts = append(ch.inserts, missing...)
			continue
		}
		m, err := marshal(struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		}{"user", rawMessages(missing)})
		if err != nil {
			return nil, nil, err
		}
		t.after[i] = append(t.after[i], m)
	}
	for j, c := range cs {
		if c.Role == "model" {
			continue
		}
		for k, p := range c.parts {
			if !p.response || answers[j][k] {
				continue
			}
			note, err := marshal(struct {
				Text string `json:"text"`
			}{orphanNote(p.id(), p.Name+" returned "+string(compact(p.Response)))})
			if err != nil {
				return nil, nil, err
			}
			ch := change(j)
			ch.drop[k] = true
			ch.tail = append(ch.tail, note)
			rep.fix(&HistoryError{Index: j, Fault: OrphanResult, CallID: p.id(), Tool: p.Name,
				Detail: "a functionResponse that answers no call of the content before it", Repair: "a text part quoting it, at the end of the content"},
				pointer(member, j, "parts", k))
		}
	}
	for j := range cs {
		if c := changes[j]; c != nil {
			if err := t.rebuildArray(j, *c, "parts"); err != nil {
				return nil, nil, err
			}
		}
	}
	return t.result(), rep.fixes, nil
}
