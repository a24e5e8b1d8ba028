package httpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/toolguard/toolguard/guard"
)

// Histories the provider would refuse.
//
// A transcript with a tool call that has no result, a result whose call is
// not in the transcript, a call id given twice, past arguments that are not
// a JSON object, or an Anthropic tool_use whose input is null is answered
// with a 400 by the providers, on that turn and every later one: the agent
// is stuck. HistoryCheck finds these in the client's request before it is
// sent and repairs what it can repair without guessing, or refuses the
// request with a 422 that names the message. Each protocol's file
// (history_chat.go, …) reads and repairs its own transcript over the
// shared pieces here.

// HistoryPolicy says what [HistoryCheck] does with a history the provider
// would refuse.
type HistoryPolicy int

const (
	// RepairHistory (the zero value) repairs what is unambiguous, reports
	// each repair as a [guard.EventHistoryRepaired], and refuses the rest
	// with a 422 (a *[HistoryError]). It never invents arguments and never
	// drops what the client sent: see [HistoryCheck].
	RepairHistory HistoryPolicy = iota
	// RefuseHistory repairs nothing: a history with any fault is refused
	// with a 422 of type invalid_history naming the first faulty message,
	// and nothing is sent upstream.
	RefuseHistory
)

// HistoryFault names what is wrong in a history.
type HistoryFault string

// The faults [HistoryCheck] finds.
const (
	// UnansweredCall: a tool call with no result. Repaired with a result
	// that is an error saying the call's outcome is unknown, placed where
	// the protocol wants the call's results.
	UnansweredCall HistoryFault = "unanswered_call"
	// OrphanResult: a tool result whose call is not where the protocol
	// looks for it. Repaired by turning it into a user note that quotes it
	// whole, where a user turn may stand.
	OrphanResult HistoryFault = "orphan_result"
	// DuplicateID: a call id given to two calls. Repaired by renaming the
	// later call and its result, when which result answers which call is
	// unambiguous; refused otherwise.
	DuplicateID HistoryFault = "duplicate_id"
	// NonObjectArguments: a past call's arguments are not a JSON object
	// (Chat and Responses arguments text that does not parse as one, an
	// Anthropic input or a Gemini args that is a string, an array, a
	// number). Repaired: the arguments become {} and the text as sent is
	// kept in a note in the call's result.
	NonObjectArguments HistoryFault = "non_object_arguments"
	// NullInput: an Anthropic tool_use whose input is null or missing.
	// Repaired with {} (a null holds nothing to keep).
	NullInput HistoryFault = "null_input"
	// HistoryTooLarge: the repaired request would be larger than
	// [MaxBody]. Refused.
	HistoryTooLarge HistoryFault = "history_too_large"
)

// HistoryError is a fault of a request's history: what [HistoryCheck]
// refuses a request with (the client reads a 422 of type invalid_history
// in the protocol's shape, x-should-retry: false, whose message is
// Error's), and the Err of each [guard.EventHistoryRepaired], which says
// what was repaired.
type HistoryError struct {
	// Member is the request member that holds the transcript: "messages"
	// (Chat Completions, Anthropic), "input" (Responses) or "contents"
	// (Gemini).
	Member string
	// Index is the faulty message's index in Member, from 0.
	Index  int
	Fault  HistoryFault
	CallID string // the call concerned; "" when it has none (Gemini)
	Tool   string // its tool's name, when known
	// Repairable says that [RepairHistory] repairs this fault; false for
	// a fault refused under either policy (an ambiguous one).
	Repairable bool
	// Detail says what was found, in a few words.
	Detail string
	// Repair says what [RepairHistory] wrote instead; "" in a refusal.
	Repair string
}

// Error names the message and the fault.
func (e *HistoryError) Error() string {
	s := fmt.Sprintf("httpguard: the provider would refuse this history: %s[%d]: %s", e.Member, e.Index, e.Fault)
	if e.CallID != "" {
		s += " (call " + strconv.Quote(e.CallID) + ")"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Repair != "" {
		s += "; repaired: " + e.Repair
	}
	return s
}

// historyProtocol is a wireProtocol whose transcript HistoryCheck reads.
type historyProtocol interface {
	// history reads the transcript of body and returns body with every
	// fault repaired and what was repaired, in order; body itself and no
	// fixes for a clean transcript. A fault that cannot be repaired
	// unambiguously is a *HistoryError (Repairable false). Any other
	// error means the transcript could not be read: the request goes as
	// it is (the provider judges it).
	history(body []byte) ([]byte, []historyFix, error)
}

// historyFix is one fault found, and the JSON Pointers of what its repair
// changed in the request body.
type historyFix struct {
	fault *HistoryError
	paths []string
}

// HistoryCheck returns a middleware that checks the history of every
// request before it is sent: in every protocol, a tool call without a
// result, a result without its call, a call id given twice, and past
// arguments that are not a JSON object (an Anthropic input that is null
// among them). Nothing else of the request is read or changed, and a
// request whose history is clean is sent byte for byte as it came.
//
// With [RepairHistory], each fault that can be repaired without guessing
// is repaired, and reported as a [guard.EventHistoryRepaired] to the
// context's handler and observers ([guard.WithEvents], [guard.Report];
// without a handler it is not logged, as a repaired argument is not):
// Err is the *[HistoryError], Paths JSON Pointers into the request as the
// client sent it, naming the message index ("/messages/3/tool_calls/0"
// for the call given a result, "/messages/4" for a result made a note). A fault that cannot (two calls of one
// turn with the same id, a result answering one of them) is refused as
// RefuseHistory refuses it. With [RefuseHistory] the request is answered
// with a 422 of type invalid_history in the protocol's shape, naming the
// message, and nothing is sent upstream. The package documentation
// ("Histories the provider would refuse") says what each protocol's
// repair writes. A request that continues server-side state (Responses'
// previous_response_id or conversation, an Anthropic thread) or refers to
// stored items (Responses' item_reference) passes unchecked: the server
// holds the rest of its history. p must be one of
// the two policies; HistoryCheck panics otherwise.
//
// Place it first, or right after [Observe] so that its events reach the
// observer: outside ToolArgValidation, a re-ask is built on the repaired
// request, and the history is checked once per logical call (inside, once
// per attempt, each repair reported again).
func HistoryCheck(p HistoryPolicy) Middleware {
	if p != RepairHistory && p != RefuseHistory {
		panic(fmt.Sprintf("httpguard: HistoryCheck(%d): not a HistoryPolicy", int(p)))
	}
	return Middleware{func(next guard.Handler[*request, *response]) guard.Handler[*request, *response] {
		return func(ctx context.Context, req *request) (*response, error) {
			out, err := checkHistory(ctx, p, req)
			if err != nil {
				return nil, err
			}
			return next(ctx, out)
		}
	}}
}

// historyStage names HistoryCheck in its events.
const historyStage = "HistoryCheck"

// checkHistory returns req with its history repaired under p, or the
// *HistoryError it is refused with.
func checkHistory(ctx context.Context, p HistoryPolicy, req *request) (*request, error) {
	hp, ok := req.proto.(historyProtocol)
	if !ok || req.unread != nil || req.wire.State.continues() != "" {
		return req, nil
	}
	body, fixes, err := hp.history(req.body)
	var he *HistoryError
	if errors.As(err, &he) {
		return nil, he
	}
	if err != nil || len(fixes) == 0 {
		return req, nil
	}
	if p == RefuseHistory {
		refused := *fixes[0].fault
		refused.Repair = ""
		return nil, &refused
	}
	if len(body) > MaxBody {
		f := fixes[0].fault
		return nil, &HistoryError{Member: f.Member, Index: f.Index, Fault: HistoryTooLarge,
			Detail: fmt.Sprintf("the repaired request would be %d bytes, past MaxBody", len(body))}
	}
	for _, f := range fixes {
		guard.Report(ctx, guard.Event{Kind: guard.EventHistoryRepaired, Middleware: historyStage,
			Tool: f.fault.Tool, CallID: f.fault.CallID, Paths: f.paths, Err: f.fault})
	}
	out := *req
	out.body = body
	return &out, nil
}

// The texts a repair writes.
const (
	// unknownOutcomeText is the result of a call that has none.
	unknownOutcomeText = "Error: the call's outcome is unknown: the conversation holds no result for it (toolguard added this). Check before calling it again."
	argsNotePrefix     = "toolguard: the arguments of this call were not a JSON object, so the conversation shows {} instead; as sent they were: "
	orphanNotePrefix   = "toolguard: a tool result whose call is not in the conversation"
)

// historyReport collects what a history check of one member (messages,
// contents, input) finds: the faults it repairs, and the refusals of
// those it cannot.
type historyReport struct {
	member string
	fixes  []historyFix
}

// fix records f, repaired, with the JSON Pointers of what changed.
func (r *historyReport) fix(f *HistoryError, paths ...string) {
	f.Member, f.Repairable = r.member, true
	r.fixes = append(r.fixes, historyFix{fault: f, paths: paths})
}

// refuse returns the error of a fault no repair makes good: element i,
// call id.
func (r *historyReport) refuse(i int, fault HistoryFault, id, detail string) error {
	return &HistoryError{Member: r.member, Index: i, Fault: fault, CallID: id, Detail: detail}
}

// argsNote is the note that keeps a call's arguments as sent.
func argsNote(sent string) string { return argsNotePrefix + sent }

// orphanNote is the user note an orphaned result becomes.
func orphanNote(id, content string) string {
	s := orphanNotePrefix
	if id != "" {
		s += " (call " + strconv.Quote(id) + ")"
	}
	return s + ": " + content
}

// pointer is the JSON Pointer of member/i followed by rest.
func pointer(member string, i int, rest ...any) string {
	var b bytes.Buffer
	b.WriteString("/" + member + "/" + strconv.Itoa(i))
	for _, r := range rest {
		fmt.Fprintf(&b, "/%v", r)
	}
	return b.String()
}

// renamed returns id with a suffix that no id in taken has, and marks it
// taken: the new id of a later call whose id an earlier one has.
func renamed(id string, taken map[string]bool) string {
	for n := 2; ; n++ {
		c := id + "_" + strconv.Itoa(n)
		if !taken[c] {
			taken[c] = true
			return c
		}
	}
}

// transcriptEdit rebuilds a transcript array: each element kept as it
// came, edited, dropped, or with elements inserted before or after it.
// Edits are found in the element as it came and applied once, and the
// spans it looks up are remembered, so that the repairs of a transcript
// cost time linear in its size however many there are.
type transcriptEdit struct {
	body   []byte
	arr    span
	elems  []span
	edits  map[int][]edit // element i's edits, in its own bytes
	drop   []bool
	before map[int][][]byte
	after  map[int][][]byte
	// members and arrays remember the spans looked up in body.
	members map[memberKey]span
	arrays  map[int][]span
}

// memberKey is a member of the object starting at body[obj].
type memberKey struct {
	obj int
	key string
}

// historyOf returns the transcript edit of the list member of the
// request body, read as readableBody reads it with schemas; nil when the
// request has no such list (no history to check).
func historyOf(body []byte, schemas schemaFinder, member string) (*transcriptEdit, error) {
	if _, err := readableBody(body, schemas); err != nil {
		return nil, err
	}
	r, err := root(body)
	if err != nil {
		return nil, err
	}
	return historyTranscript(body, r, member)
}

// historyTranscript returns the transcript edit of body's member, the
// request's history (r its root); nil when the member is not an array (a
// string input holds no calls): the history is not checked.
func historyTranscript(body []byte, r span, member string) (*transcriptEdit, error) {
	arr, ok, err := requestField(body, r, member)
	if err != nil || !ok || kind(body, arr) != '[' {
		return nil, err
	}
	return newTranscriptEdit(body, arr)
}

func newTranscriptEdit(body []byte, arr span) (*transcriptEdit, error) {
	es, err := arrayElems(body, arr)
	if err != nil {
		return nil, err
	}
	return &transcriptEdit{body: body, arr: arr, elems: es, edits: map[int][]edit{}, drop: make([]bool, len(es)),
		before: map[int][][]byte{}, after: map[int][][]byte{}, members: map[memberKey]span{}, arrays: map[int][]span{}}, nil
}

// lookup follows path (string keys, int indexes) from element i; ok is
// false when a step is missing.
func (t *transcriptEdit) lookup(i int, path ...any) (span, bool, error) {
	v := t.elems[i]
	for _, p := range path {
		switch p := p.(type) {
		case string:
			k := memberKey{v.start, p}
			next, ok := t.members[k]
			if !ok {
				var found bool
				var err error
				if next, found, err = requestField(t.body, v, p); err != nil || !found {
					return span{}, false, err
				}
				t.members[k] = next
			}
			v = next
		case int:
			es, ok := t.arrays[v.start]
			if !ok {
				var err error
				if es, err = arrayElems(t.body, v); err != nil {
					return span{}, false, err
				}
				t.arrays[v.start] = es
			}
			if p < 0 || p >= len(es) {
				return span{}, false, nil
			}
			v = es[p]
		}
	}
	return v, true, nil
}

// set sets the value at path in element i to value (a JSON value), adding
// the last key when it is missing.
func (t *transcriptEdit) set(i int, value []byte, path ...any) error {
	last := path[len(path)-1]
	parent, ok, err := t.lookup(i, path[:len(path)-1]...)
	if err != nil || !ok {
		return fmt.Errorf("%w: no %v in the message", errJSON, path[:len(path)-1])
	}
	if v, ok, err := t.lookup(i, path...); err != nil {
		return err
	} else if ok {
		t.edits[i] = append(t.edits[i], edit{at: v, text: value})
		return nil
	}
	key, isKey := last.(string)
	if !isKey || kind(t.body, parent) != '{' {
		return fmt.Errorf("%w: no %v in the message", errJSON, path)
	}
	e, err := setRequestMember(t.body, parent, key, value)
	if err != nil {
		return err
	}
	t.edits[i] = append(t.edits[i], e)
	return nil
}

// insertElems inserts items into the array at path in element i, before
// its element k (k past the end appends).
func (t *transcriptEdit) insertElems(i int, k int, items [][]byte, path ...any) error {
	arr, ok, err := t.lookup(i, path...)
	if err != nil || !ok || kind(t.body, arr) != '[' {
		return fmt.Errorf("%w: no array %v in the message", errJSON, path)
	}
	es, ok := t.arrays[arr.start]
	if !ok {
		if es, err = arrayElems(t.body, arr); err != nil {
			return err
		}
		t.arrays[arr.start] = es
	}
	joined := bytes.Join(items, []byte(","))
	var e edit
	switch {
	case len(es) == 0:
		e = edit{at: span{arr.start + 1, arr.start + 1}, text: joined}
	case k >= len(es):
		e = edit{at: span{es[len(es)-1].end, es[len(es)-1].end}, text: append([]byte(","), joined...)}
	default:
		e = edit{at: span{es[k].start, es[k].start}, text: append(joined, ',')}
	}
	t.edits[i] = append(t.edits[i], e)
	return nil
}

// elem returns element i as it will be sent.
func (t *transcriptEdit) elem(i int) []byte {
	sp := t.elems[i]
	es := t.edits[i]
	if len(es) == 0 {
		return raw(t.body, sp)
	}
	// The edits are in body's offsets: shift them into the element's.
	shifted := make([]edit, len(es))
	for k, e := range es {
		shifted[k] = edit{at: span{e.at.start - sp.start, e.at.end - sp.start}, text: e.text}
	}
	return apply(raw(t.body, sp), shifted...)
}

// changed reports whether anything was edited.
func (t *transcriptEdit) changed() bool {
	if len(t.before) > 0 || len(t.after) > 0 {
		return true
	}
	if len(t.edits) > 0 {
		return true
	}
	for _, d := range t.drop {
		if d {
			return true
		}
	}
	return false
}

// result returns the body with the transcript rebuilt; the body as it came
// when nothing was edited.
func (t *transcriptEdit) result() []byte {
	if !t.changed() {
		return t.body
	}
	var out []byte
	out = append(out, '[')
	n := 0
	add := func(b []byte) {
		if n > 0 {
			out = append(out, ',')
		}
		n++
		out = append(out, b...)
	}
	for i := range t.elems {
		for _, b := range t.before[i] {
			add(b)
		}
		if !t.drop[i] {
			add(t.elem(i))
		}
		for _, b := range t.after[i] {
			add(b)
		}
	}
	out = append(out, ']')
	return apply(t.body, edit{at: t.arr, text: out})
}

// textOf returns a result's content as note text: a string as it is, an
// array of text parts (partType's, e.g. "text") their texts joined, and
// anything else as its JSON; ok is false for an array holding other parts
// (an image), which a note cannot keep.
func textOf(content json.RawMessage, partType string) (string, bool) {
	if len(content) == 0 || string(content) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if json.Unmarshal(content, &parts) == nil {
		var b bytes.Buffer
		for i, p := range parts {
			if p.Type != partType || p.Text == nil {
				return "", false
			}
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(*p.Text)
		}
		return b.String(), true
	}
	return string(content), true
}

// isObject reports whether v is a JSON object.
func isObject(v []byte) bool {
	v = bytes.TrimLeft(v, " \t\r\n")
	return len(v) > 0 && v[0] == '{' && json.Valid(v)
}

// historyArgs returns a call's arguments as a JSON string holds them (Chat,
// Responses): ok when they are a string whose text is a JSON object; sent
// is what a note keeps of them.
func historyArgs(args json.RawMessage) (sent string, ok bool) {
	var s string
	if json.Unmarshal(args, &s) != nil {
		if len(args) == 0 {
			return "(none)", false
		}
		return string(args), false
	}
	if s == "" {
		return "(empty)", false
	}
	return s, isObject([]byte(s))
}

// arrayChange is a change to an array inside an element: elements dropped,
// items inserted before element at (past the end: after the last), items
// appended at the end.
type arrayChange struct {
	drop    map[int]bool
	at      int
	inserts [][]byte
	tail    [][]byte
}

// rebuildArray rewrites the array at path in element i with c: its kept
// elements as they will be sent (with the edits already made inside
// them), c's items placed. Call it after every other edit inside that
// array.
func (t *transcriptEdit) rebuildArray(i int, c arrayChange, path ...any) error {
	arr, ok, err := t.lookup(i, path...)
	if err != nil || !ok || kind(t.body, arr) != '[' {
		return fmt.Errorf("%w: no array %v in the message", errJSON, path)
	}
	es, ok := t.arrays[arr.start]
	if !ok {
		if es, err = arrayElems(t.body, arr); err != nil {
			return err
		}
	}
	var inside, outside []edit
	for _, e := range t.edits[i] {
		if arr.start < e.at.start && e.at.end < arr.end {
			inside = append(inside, e)
		} else {
			outside = append(outside, e)
		}
	}
	var items [][]byte
	for k, sp := range es {
		if k == c.at {
			items = append(items, c.inserts...)
		}
		if c.drop[k] {
			continue
		}
		var own []edit
		for _, e := range inside {
			if sp.start <= e.at.start && e.at.end <= sp.end {
				own = append(own, edit{at: span{e.at.start - sp.start, e.at.end - sp.start}, text: e.text})
			}
		}
		items = append(items, apply(raw(t.body, sp), own...))
	}
	if c.at >= len(es) {
		items = append(items, c.inserts...)
	}
	items = append(items, c.tail...)
	text := append([]byte{'['}, bytes.Join(items, []byte(","))...)
	t.edits[i] = append(outside, edit{at: arr, text: append(text, ']')})
	return nil
}

// blockAt is block k of message j (an Anthropic content block, a Gemini
// part).
type blockAt struct{ j, k int }

// rawMessages returns items as json.RawMessages.
func rawMessages(items [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, b := range items {
		out[i] = b
	}
	return out
}
