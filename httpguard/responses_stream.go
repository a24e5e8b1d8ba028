package httpguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unsafe"
)

// responsesEvent is what the wire code reads of a Responses stream event
// (decodeResponsesEvent reads it as encoding/json would by the tags).
type responsesEvent struct {
	Type        string          `json:"type"`
	Response    json.RawMessage `json:"response"`
	OutputIndex *int            `json:"output_index"`
	Item        json.RawMessage `json:"item"`
	// Delta is delta as it came: a string, or null (parseResponsesEvent
	// refuses any other), decoded only where the assembler keeps it.
	Delta json.RawMessage `json:"delta"`
	// Seq is sequence_number as it came (a gate renumbers the events it
	// writes; the parsed form reads nothing else it changes).
	Seq json.RawMessage `json:"sequence_number"`
	// itemType is an output_item event's item type.
	itemType string
}

// responsesEventBox is a parsed event and the output_index it points to,
// allocated as one.
type responsesEventBox struct {
	e   responsesEvent
	idx int
}

// parseResponsesEvent returns ev parsed: the one a gate parsed, else
// parsed now.
func parseResponsesEvent(ev streamEvent) (*responsesEvent, error) {
	return parseResponsesEventIn(ev, nil)
}

// responsesEventSlab is how many parsed events an assembler allocates at
// once.
const responsesEventSlab = 32

// parseResponsesEventIn is parseResponsesEvent, with the parsed event
// taken from *slab when slab is not nil (refilled when empty): an
// assembler parses a stream's events in a few allocations, not one each.
func parseResponsesEventIn(ev streamEvent, slab *[]responsesEventBox) (*responsesEvent, error) {
	if e, ok := ev.parsed.(*responsesEvent); ok {
		return e, nil
	}
	var box *responsesEventBox
	if slab == nil {
		box = &responsesEventBox{}
	} else {
		if len(*slab) == 0 {
			*slab = make([]responsesEventBox, responsesEventSlab)
		}
		box = &(*slab)[0]
		*slab = (*slab)[1:]
	}
	e := &box.e
	err := decodeResponsesEventAt(ev.Data, e, &box.idx)
	if err == nil && len(e.Delta) > 0 && e.Delta[0] != '"' && e.Delta[0] != 'n' {
		err = fmt.Errorf("%w: want a string", errJSON)
	}
	if err != nil {
		return nil, unguardable("a stream event that cannot be read", fmt.Errorf("%w: responses event: %w", errJSON, err))
	}
	if e.Type == "error" {
		return nil, &upstreamStreamError{Data: append([]byte(nil), ev.Data...)}
	}
	if e.Type == "response.output_item.added" || e.Type == "response.output_item.done" {
		var err error
		if e.itemType, err = responsesItemType(e.Item); err != nil {
			return nil, fmt.Errorf("%w: responses item: %w", errJSON, err)
		}
	}
	return e, nil
}

// responsesTerminal reports whether an event type ends a response.
func responsesTerminal(typ string) bool {
	return typ == "response.completed" || typ == "response.incomplete" || typ == "response.failed"
}

// itemAcc is one output item of a stream as the assembler holds it.
type itemAcc struct {
	item  []byte // the latest whole item: added, then done
	typ   string
	done  bool
	args  strings.Builder // function_call arguments deltas
	input strings.Builder // custom_tool_call input deltas
}

// responsesAssembler assembles a Responses stream into a response: the
// terminal event's response when it came, else the created response with
// the items seen. Output items come one after another, as OpenAI streams
// them: an event for an item before the latest, or for an item after its
// output_item.done, is refused (an *unguardableError), since a client may
// read it where the guard would not. Its budget counts what it holds of
// the response (the created and terminal responses, the items, the
// argument and input deltas), not the events' envelopes.
type responsesAssembler struct {
	budget
	base  []byte
	final []byte
	items []*itemAcc
	// slab holds the events add will parse into; first the items' room
	// for a response of a few items, without an allocation each.
	slab  []responsesEventBox
	first [4]itemAcc
	ptrs  [4]*itemAcc
	last  *responsesEvent // the event add took last
	// outputIs caches finalIsItems until the next event: 0 not known
	// yet, 1 false, 2 true.
	outputIs uint8
}

// hold accounts for a value of n bytes held in place of one of old bytes.
func (a *responsesAssembler) hold(old, n int) error {
	a.n -= old
	return a.take(n)
}

// current returns the item e names: the latest item, before its end.
func (a *responsesAssembler) current(e *responsesEvent) (*itemAcc, error) {
	if e.OutputIndex == nil {
		return nil, unguardable("an output item event without output_index", fmt.Errorf("%s", e.Type))
	}
	i, n := *e.OutputIndex, len(a.items)
	switch {
	case i < 0 || i >= n:
		return nil, unguardable("an event for an output item that was not added", fmt.Errorf("%s for item %d of %d", e.Type, i, n))
	case i < n-1:
		return nil, unguardable("an event for an output item after a later item began", fmt.Errorf("%s for item %d of %d", e.Type, i, n))
	case a.items[i].done:
		return nil, unguardable("an event for an output item after its end", fmt.Errorf("%s for item %d", e.Type, i))
	}
	return a.items[i], nil
}

func (a *responsesAssembler) add(ev streamEvent) (bool, error) {
	a.outputIs = 0
	e, err := parseResponsesEventIn(ev, &a.slab)
	if err != nil {
		return false, err
	}
	a.last = e
	switch {
	case e.Type == "response.created" || e.Type == "response.in_progress" || e.Type == "response.queued":
		if err := a.hold(len(a.base), len(e.Response)); err != nil {
			return false, err
		}
		a.base = e.Response
	case responsesTerminal(e.Type):
		if err := a.hold(len(a.final), len(e.Response)); err != nil {
			return false, err
		}
		a.final = e.Response
		return true, nil
	case e.Type == "response.output_item.added":
		return false, a.addItem(e)
	case e.Type == "response.output_item.done":
		return false, a.doneItem(e)
	case e.OutputIndex != nil ||
		e.Type == "response.function_call_arguments.delta" || e.Type == "response.custom_tool_call_input.delta":
		return false, a.addDelta(e)
	}
	return false, nil
}

// addItem opens the item an output_item.added event e adds.
func (a *responsesAssembler) addItem(e *responsesEvent) error {
	if e.OutputIndex == nil {
		return unguardable("an output item event without output_index", fmt.Errorf("%s", e.Type))
	}
	if i := *e.OutputIndex; i != len(a.items) {
		return unguardable("an output item added out of order", fmt.Errorf("item %d added after %d items", i, len(a.items)))
	}
	if responsesItemKind(e.itemType) == 0 {
		return unguardable("an output item of a type the guard does not know", fmt.Errorf("type %q", e.itemType))
	}
	if err := a.take(len(e.Item)); err != nil {
		return err
	}
	var it *itemAcc
	if n := len(a.items); n < len(a.first) {
		if n == 0 {
			a.items = a.ptrs[:0]
		}
		it = &a.first[n]
	} else {
		it = &itemAcc{}
	}
	it.item, it.typ = e.Item, e.itemType
	a.items = append(a.items, it)
	return nil
}

// doneItem takes the whole item an output_item.done event e ends.
func (a *responsesAssembler) doneItem(e *responsesEvent) error {
	it, err := a.current(e)
	if err != nil {
		return err
	}
	if e.itemType != it.typ {
		return unguardable("an output item whose type changed", fmt.Errorf("%q added, %q done", it.typ, e.itemType))
	}
	if err := a.hold(len(it.item), len(e.Item)); err != nil {
		return err
	}
	it.item, it.done = e.Item, true
	return nil
}

// addDelta accumulates an event e of an open item: a call's arguments or
// a custom tool call's input; any other event of an item (its text, which
// the item's done event holds whole) is checked for its item only.
func (a *responsesAssembler) addDelta(e *responsesEvent) error {
	it, err := a.current(e)
	if err != nil {
		return err
	}
	var acc *strings.Builder
	switch e.Type {
	case "response.function_call_arguments.delta":
		acc = &it.args
	case "response.custom_tool_call_input.delta":
		acc = &it.input
	default:
		return nil
	}
	if len(e.Delta) == 0 || e.Delta[0] != '"' {
		return nil // absent or null: nothing to add
	}
	n, ok := unquotedLen(e.Delta)
	if !ok {
		n = len(e.Delta) // an upper bound of what it decodes to
	}
	if err := a.take(n); err != nil {
		return err
	}
	return appendUnquoted(acc, e.Delta)
}

func (a *responsesAssembler) response() ([]byte, error) {
	if a.final != nil {
		return a.final, nil
	}
	if a.base == nil {
		return nil, unguardable("a stream without response.created", nil)
	}
	// A stream cut short: what its items amount to.
	out := make([][]byte, 0, len(a.items))
	for _, it := range a.items {
		b := it.item
		var err error
		switch {
		case it.done:
		case it.typ == "function_call":
			b, err = setAt(b, nil, "arguments", marshalString(it.args.String()))
		case it.typ == "custom_tool_call":
			b, err = setAt(b, nil, "input", marshalString(it.input.String()))
		}
		if err != nil {
			return nil, unguardable("an output item that cannot be read", err)
		}
		out = append(out, b)
	}
	return setAt(a.base, nil, "output", append(append([]byte("["), joinRaw(out)...), ']'))
}

// calls implements assembler.calls: the calls of response(), read once. A
// stream that ended has its terminal event's response, which response()
// returns as it came (nothing is built); when its output is the items as
// they streamed (responsesOutputIs, as OpenAI sends it), the calls are
// read from the items, which the decoder has read, else from the response
// as from a sync response; a stream cut short has only the created
// response and the items, which response() joins.
func (a *responsesAssembler) calls() ([]wireCall, error) {
	if a.finalIsItems() {
		cs, err := responsesItemCalls(a.items)
		if err != nil {
			return nil, unguardable("the streamed response is not of a shape the guard reads", err)
		}
		return cs, nil
	}
	resp, err := a.response()
	if err != nil {
		return nil, err
	}
	cs, err := responsesWire{}.calls(resp)
	if err != nil {
		return nil, unguardable("the streamed response is not of a shape the guard reads", err)
	}
	return cs, nil
}

// responsesItemCalls is what responsesWire.calls reads of a response
// whose output is items (responsesOutputIs), read from the items' own
// bytes without reading the response again: each item's type is its typ
// (the assembler read it from the added item and checked the done item
// has it), so the function calls are those of type function_call, each
// read as responsesWire.calls reads it; a tool_search_call's execution is
// checked first, as responsesOutput checks it.
func responsesItemCalls(items []*itemAcc) ([]wireCall, error) {
	n := 0
	for _, it := range items {
		k := responsesItemKind(it.typ)
		switch {
		case k == 0:
			return nil, unguardable("an output item of a type the guard does not know", fmt.Errorf("type %q", it.typ))
		case it.typ == "tool_search_call":
			if _, err := toolSearchKind(it.item, checkedRoot(it.item)); err != nil {
				return nil, err
			}
		case k == itemFunction:
			n++
		}
	}
	out := make([]wireCall, 0, n)
	for _, it := range items {
		if responsesItemKind(it.typ) != itemFunction {
			continue
		}
		b, sp := it.item, checkedRoot(it.item)
		id, err := optStr(b, sp, "call_id")
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		name, err := optStr(b, sp, "name")
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		args, err := optStrBytes(b, sp, "arguments")
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		ns, err := optStr(b, sp, "namespace")
		if err != nil {
			return nil, unguardable("a function call that cannot be read", err)
		}
		out = append(out, wireCall{ID: id, Name: namespacedName(ns, name), Args: args})
	}
	return out, nil
}

// optStrBytes is []byte(optStr(b, sp, key)), made at once: a string of
// only the escapes unquotedBytes decodes in place (a call's arguments,
// whose quotes are escaped) is decoded into the slice, not made a string
// and copied.
func optStrBytes(b []byte, sp span, key string) ([]byte, error) {
	v, ok, err := field(b, sp, key)
	if err != nil {
		return nil, err
	}
	if !ok || kind(b, v) == 'n' {
		return []byte{}, nil
	}
	if kind(b, v) != '"' {
		_, err := str(b, v)
		return nil, err
	}
	return unquotedBytes(raw(b, v))
}

// responsesGate is the streamGate of OpenAI Responses. Its client's events
// keep one sequence_number run and one response id across attempts, and
// output_index runs on from the first attempt's items.
type responsesGate struct {
	w        io.Writer
	attempt  int
	asm      *responsesAssembler
	seq      int
	id       string // the first attempt's response id
	holding  bool
	passed   int      // items of the first attempt that reached the client
	shown    [][]byte // those items, whole, once the first attempt ended
	terminal []streamEvent
	// held are the first attempt's events that did not reach the client,
	// as they came, with their parsed forms: release hands them on.
	held []streamEvent
	// heldBytes is what held costs (hold); unreleasable is set once that
	// passed MaxBody and held was dropped.
	heldBytes    int
	unreleasable bool
	ended        bool
	// firstAsm is the first attempt's assembler, allocated with the gate,
	// and oneTerminal the room of an attempt's terminal event (there is
	// one, but for an upstream that sends more).
	firstAsm    responsesAssembler
	oneTerminal [1]streamEvent
}

func newResponsesGate(w io.Writer) *responsesGate {
	g := &responsesGate{w: w}
	g.asm = &g.firstAsm
	return g
}

// send writes data with its sequence_number set to the gate's next.
func (g *responsesGate) send(event string, data []byte) error {
	return g.sendEvent(streamEvent{Event: event, Data: data})
}

// sendEvent writes ev with its sequence_number set to the gate's next: as
// it is, with its parsed form, when it has that number and an event name
// already (an event of the first attempt the gate passes on in order).
func (g *responsesGate) sendEvent(ev streamEvent) error {
	seq := strconv.Itoa(g.seq)
	g.seq++
	if e, ok := ev.parsed.(*responsesEvent); ok && ev.Event != "" && string(e.Seq) == seq {
		return writeEvent(g.w, ev)
	}
	b, err := setAt(ev.Data, nil, "sequence_number", []byte(seq))
	if err != nil {
		return err
	}
	out := streamEvent{Event: ev.Event, Data: b}
	if e, ok := ev.parsed.(*responsesEvent); ok {
		renumbered := *e
		renumbered.Seq = json.RawMessage(seq)
		out.parsed = &renumbered
		if out.Event == "" {
			out.Event = e.Type
		}
	}
	if out.Event == "" {
		var t struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &t)
		out.Event = t.Type
	}
	return writeEvent(g.w, out)
}

func (g *responsesGate) event(ev streamEvent) (bool, error) {
	if g.ended {
		return true, nil
	}
	done, err := g.asm.add(ev)
	if err != nil {
		return done, err
	}
	e := g.asm.last // add parsed it
	first := g.attempt == 0
	pass := false
	switch {
	case e.Type == "response.created" || e.Type == "response.in_progress" || e.Type == "response.queued":
		if first && g.id == "" && len(e.Response) > 0 {
			g.id, _ = optStr(e.Response, checkedRoot(e.Response), "id")
		}
		pass = first
	case responsesTerminal(e.Type):
		if g.terminal == nil {
			g.terminal = g.oneTerminal[:0]
		}
		g.terminal = append(g.terminal, streamEvent{Event: ev.Event, Data: ev.Data, parsed: e})
	case e.Type == "response.output_item.added":
		// A function call is held until it is validated, and every item
		// after it, in order; the other items pass as they come.
		if g.asm.items[*e.OutputIndex].typ == "function_call" {
			g.holding = true
		}
		if first && !g.holding {
			g.passed++
			pass = true
		}
	case e.OutputIndex != nil:
		pass = first && *e.OutputIndex < g.passed
	default:
		pass = first && !g.holding
	}
	switch {
	case pass:
		return done, g.sendEvent(streamEvent{Event: ev.Event, Data: ev.Data, parsed: e})
	case first:
		g.hold(streamEvent{Event: ev.Event, Data: ev.Data, parsed: e})
	}
	return done, nil
}

// heldEventCost is what the gate holds of a held event beyond its data:
// the event and its parsed form.
const heldEventCost = int(unsafe.Sizeof(streamEvent{}) + unsafe.Sizeof(responsesEventBox{}))

// hold keeps ev, an event of the first attempt that did not reach the
// client, as it came, for release. What it holds is bounded by MaxBody,
// counting what holding an event costs beyond its data (so however small
// the events): past that it drops them and the attempt is not released
// (accept writes it from the assembled response, as it would have), so a
// stream the assembler takes is never refused for what release keeps.
func (g *responsesGate) hold(ev streamEvent) {
	if g.unreleasable {
		return
	}
	g.heldBytes += len(ev.Data) + heldEventCost
	if g.heldBytes > MaxBody {
		g.held, g.unreleasable = nil, true
		return
	}
	if g.held == nil {
		g.held = make([]streamEvent, 0, heldFirst)
	}
	g.held = append(g.held, ev)
}

// heldFirst is the room a gate first makes for the events it holds: those
// of two calls and the terminal event, in one allocation rather than one
// per doubling.
const heldFirst = 16

// release implements streamGate.release: it ends the first attempt by handing on
// the events it held as they came, when accept would write nothing else
// (releasable). Nothing is written when it reports false.
func (g *responsesGate) release() (bool, error) {
	if g.ended || g.attempt != 0 || g.unreleasable || !g.releasable() {
		return false, nil
	}
	g.ended = true
	held := g.held
	g.held = nil
	for _, ev := range held {
		g.seq++
		if err := writeEvent(g.w, ev); err != nil {
			return true, err
		}
	}
	return true, nil
}

// releasable reports whether accepting the first attempt's own response,
// its calls unchanged, would tell the client nothing the held events do
// not: they end with the attempt's terminal event and carry the
// sequence_numbers the gate would give them, under their event names (so
// none would be renumbered or named); the terminal response's output is
// the items as they streamed, joined (accept would write that output
// anew, from the items of that response); and each function call
// streamed as that output holds it, validated: its added item with its
// name, namespace and call_id and no arguments yet, its argument deltas,
// its arguments' done event and its done item all holding the same
// arguments. A client reads the validated calls whichever of these its
// accumulator reads.
func (g *responsesGate) releasable() bool {
	a, n := g.asm, len(g.held)
	if g.seq == 0 || n == 0 || len(g.terminal) != 1 || a.final == nil {
		return false // accept would write response.created, or a terminal event
	}
	var buf [20]byte
	for k, ev := range g.held {
		e, ok := ev.parsed.(*responsesEvent)
		if !ok || ev.Event == "" || string(e.Seq) != string(strconv.AppendInt(buf[:0], int64(g.seq+k), 10)) {
			return false
		}
		if k == n-1 {
			if !responsesTerminal(e.Type) {
				return false
			}
		} else if e.OutputIndex == nil || *e.OutputIndex < g.passed {
			return false // an event accept would drop
		}
	}
	if !a.finalIsItems() {
		return false
	}
	for _, ev := range g.held[:n-1] {
		e := ev.parsed.(*responsesEvent)
		it := a.items[*e.OutputIndex]
		if it.typ != "function_call" {
			continue
		}
		switch e.Type {
		case "response.output_item.added":
			if !responsesCallAdded(e.Item, it.item) {
				return false
			}
		case "response.function_call_arguments.done":
			if !sameMember(ev.Data, it.item, "arguments") {
				return false
			}
		}
	}
	for _, it := range a.items {
		if it.typ == "function_call" && !sameString(it.item, "arguments", it.args.String()) {
			return false
		}
	}
	return true
}

// finalIsItems reports whether the stream ended and its terminal
// response's output is its items, as they streamed (responsesOutputIs):
// read once for calls and release both.
func (a *responsesAssembler) finalIsItems() bool {
	if a.outputIs == 0 {
		a.outputIs = 1
		if a.final != nil && responsesOutputIs(a.final, a.items) {
			a.outputIs = 2
		}
	}
	return a.outputIs == 2
}

// responsesOutputIs reports whether resp's output is items, done, joined
// as a JSON array with nothing between them. resp is a terminal event's
// response, as the decoder read it (checkedRoot).
func responsesOutputIs(resp []byte, items []*itemAcc) bool {
	r := checkedRoot(resp)
	if kind(resp, r) != '{' {
		return false
	}
	o, ok, err := field(resp, r, "output")
	if err != nil || !ok {
		return false
	}
	out := raw(resp, o)
	if len(out) < 2 || out[0] != '[' || out[len(out)-1] != ']' {
		return false
	}
	out = out[1 : len(out)-1]
	for i, it := range items {
		if !it.done {
			return false
		}
		if i > 0 {
			if len(out) == 0 || out[0] != ',' {
				return false
			}
			out = out[1:]
		}
		if !bytes.HasPrefix(out, it.item) {
			return false
		}
		out = out[len(it.item):]
	}
	return len(out) == 0
}

// checkedRoot is root(b) for b the decoder has read as one JSON value,
// whole (an event's data) or a member's (an event's response or item):
// the span of b without the space around it, found without reading the
// value again. (An absent member, nil, gives an empty span, which no
// reader takes for an object.)
func checkedRoot(b []byte) span {
	i, j := skipSpace(b, 0), len(b)
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return span{i, j}
}

// responsesCallAdded reports whether added, a function call's item as
// output_item.added carried it, is the call done holds before its
// arguments: the same name, namespace and call_id, and no arguments.
func responsesCallAdded(added, done []byte) bool {
	for _, m := range []string{"name", "namespace", "call_id"} {
		if !sameMember(added, done, m) {
			return false
		}
	}
	return sameString(added, "arguments", "")
}

// sameMember reports whether the objects a and b hold the same string
// member key (absent and null count as "", as optStr reads them).
func sameMember(a, b []byte, key string) bool {
	va, oka := stringMember(a, key)
	vb, okb := stringMember(b, key)
	switch {
	case !oka || !okb:
		return false
	case string(va) == string(vb):
		return true
	case va == nil:
		return jsonStringIs(vb, "")
	case vb == nil:
		return jsonStringIs(va, "")
	}
	s, err := unquote(vb)
	return err == nil && jsonStringIs(va, s)
}

// sameString reports whether the object b's string member key is s ("" for
// absent or null).
func sameString(b []byte, key, s string) bool {
	v, ok := stringMember(b, key)
	if !ok {
		return false
	}
	if v == nil {
		return s == ""
	}
	return jsonStringIs(v, s)
}

// stringMember is the string member key of the object b, quoted as it came; nil
// when absent or null; ok false when b is not an object, has key twice
// or in another case, or its value is not a string. b is an event the
// decoder read, or a value in one (checkedRoot).
func stringMember(b []byte, key string) (q []byte, ok bool) {
	r := checkedRoot(b)
	if kind(b, r) != '{' {
		return nil, false
	}
	v, found, err := field(b, r, key)
	switch {
	case err != nil:
		return nil, false
	case !found || kind(b, v) == 'n':
		return nil, true
	case kind(b, v) != '"':
		return nil, false
	}
	return raw(b, v), true
}

func (g *responsesGate) response() ([]byte, error) { return g.asm.response() }

func (g *responsesGate) current() assembler { return g.asm }

// emit writes a synthesized event: type typ, then fields (key, value
// pairs; a []byte value is raw JSON, any other is marshalled), then the
// gate's next sequence_number, written in that order.
func (g *responsesGate) emit(typ string, fields ...any) error {
	b := make([]byte, 0, 128)
	b = append(b, `{"type":`...)
	b = append(b, marshalString(typ)...)
	for i := 0; i+1 < len(fields); i += 2 {
		v, ok := fields[i+1].([]byte)
		if !ok {
			var err error
			if v, err = marshal(fields[i+1]); err != nil {
				return err
			}
		}
		b = append(b, ',')
		b = append(b, marshalString(fields[i].(string))...)
		b = append(b, ':')
		b = append(b, v...)
	}
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(g.seq), 10)
	b = append(b, '}')
	g.seq++
	return writeEvent(g.w, streamEvent{Event: typ, Data: b})
}

// emitItem writes the item at sp of resp whole as the client's item idx:
// output_item.added with the item emptied, its content or its arguments
// in one delta each, then output_item.done with the item as it is.
func (g *responsesGate) emitItem(idx int, resp []byte, sp span) error {
	item := raw(resp, sp)
	typ, err := optStr(resp, sp, "type")
	if err != nil {
		return err
	}
	id, err := optStr(resp, sp, "id")
	if err != nil {
		return err
	}
	added, err := responsesItemAdded(typ, item)
	if err != nil {
		return err
	}
	if err := g.emit("response.output_item.added", "output_index", idx, "item", added); err != nil {
		return err
	}
	switch typ {
	case "message":
		err = g.emitParts(idx, id, resp, sp)
	case "function_call":
		err = g.emitWhole("response.function_call_arguments", idx, id, "arguments", resp, sp)
	case "custom_tool_call":
		err = g.emitWhole("response.custom_tool_call_input", idx, id, "input", resp, sp)
	}
	if err != nil {
		return err
	}
	return g.emit("response.output_item.done", "output_index", idx, "item", item)
}

// responsesItemAdded is item, of type typ, as output_item.added carries
// it: before its content, summary, arguments or input.
func responsesItemAdded(typ string, item []byte) ([]byte, error) {
	switch typ {
	case "message":
		added, err := setAt(item, nil, "content", []byte("[]"))
		if err != nil {
			return nil, err
		}
		return setAt(added, nil, "status", []byte(`"in_progress"`))
	case "reasoning":
		return setAt(item, nil, "summary", []byte("[]"))
	case "function_call":
		added, err := setAt(item, nil, "arguments", []byte(`""`))
		if err != nil {
			return nil, err
		}
		return setAt(added, nil, "status", []byte(`"in_progress"`))
	case "custom_tool_call":
		return setAt(item, nil, "input", []byte(`""`))
	}
	return item, nil
}

// emitParts writes the content parts of the message item id at sp of
// resp, the client's item idx: each part added, an output_text's text in
// one delta, then the part done.
func (g *responsesGate) emitParts(idx int, id string, resp []byte, sp span) error {
	parts, ok, err := field(resp, sp, "content")
	if err != nil {
		return err
	}
	var ps []span
	if ok && kind(resp, parts) == '[' {
		if ps, err = arrayElems(resp, parts); err != nil {
			return err
		}
	}
	for j, p := range ps {
		ptyp, err := optStr(resp, p, "type")
		if err != nil {
			return err
		}
		part := raw(resp, p)
		if ptyp != "output_text" {
			if err := g.emit("response.content_part.added", "item_id", id, "output_index", idx, "content_index", j, "part", part); err != nil {
				return err
			}
		} else {
			text, err := optStr(resp, p, "text")
			if err != nil {
				return err
			}
			empty, err := setAt(part, nil, "text", []byte(`""`))
			if err != nil {
				return err
			}
			if err := g.emit("response.content_part.added", "item_id", id, "output_index", idx, "content_index", j, "part", empty); err != nil {
				return err
			}
			if err := g.emit("response.output_text.delta", "item_id", id, "output_index", idx, "content_index", j, "delta", text, "logprobs", []byte("[]")); err != nil {
				return err
			}
			if err := g.emit("response.output_text.done", "item_id", id, "output_index", idx, "content_index", j, "text", text, "logprobs", []byte("[]")); err != nil {
				return err
			}
		}
		if err := g.emit("response.content_part.done", "item_id", id, "output_index", idx, "content_index", j, "part", part); err != nil {
			return err
		}
	}
	return nil
}

// emitWhole writes member of the call item id at sp of resp, the client's
// item idx, in one <prefix>.delta event, then <prefix>.done with the
// member whole.
func (g *responsesGate) emitWhole(prefix string, idx int, id, member string, resp []byte, sp span) error {
	v, err := optStr(resp, sp, member)
	if err != nil {
		return err
	}
	if err := g.emit(prefix+".delta", "item_id", id, "output_index", idx, "delta", v); err != nil {
		return err
	}
	return g.emit(prefix+".done", "item_id", id, "output_index", idx, member, v)
}

func (g *responsesGate) accept(resp []byte) error {
	if g.ended {
		return nil
	}
	g.ended = true
	items, _, kinds, err := responsesOutput(resp)
	if err != nil {
		return err
	}
	if g.seq == 0 {
		// No event of any attempt reached the client (a stand-in answer):
		// the stream starts here, with resp as created.
		if err := g.created(resp); err != nil {
			return err
		}
	}
	emit, err := g.acceptedItems(resp, items, kinds)
	if err != nil {
		return err
	}
	output := append([][]byte(nil), g.shown...)
	for k, i := range emit {
		if err := g.emitItem(g.passed+k, resp, items[i]); err != nil {
			return err
		}
		output = append(output, raw(resp, items[i]))
	}
	return g.end(resp, output)
}

// acceptedItems returns the indexes of resp's items the client reads:
// for the first attempt those the client has not read (and it notes in
// shown those it has); for a later one its calls (function calls, the
// other calls, the tools OpenAI ran) or, when it has no call (the model
// answered in text after a re-ask, or a stand-in answer), its message
// items, since that text is the answer. A later attempt's text and
// reasoning beside its calls are not streamed again.
func (g *responsesGate) acceptedItems(resp []byte, items []span, kinds []itemKind) ([]int, error) {
	var emit []int
	if g.attempt == 0 {
		g.shown = nil
		for i := 0; i < g.passed && i < len(items); i++ {
			g.shown = append(g.shown, raw(resp, items[i]))
		}
		for i := g.passed; i < len(items); i++ {
			emit = append(emit, i)
		}
		return emit, nil
	}
	var text []int
	calls := false
	for i, it := range items {
		typ, err := optStr(resp, it, "type")
		if err != nil {
			return nil, err
		}
		switch {
		case typ == "message":
			text = append(text, i)
		case typ == "reasoning" || typ == "compaction":
		default:
			emit = append(emit, i)
			calls = calls || kinds[i] != itemPassed
		}
	}
	if !calls {
		return text, nil
	}
	return emit, nil
}

// end writes the terminal event: the attempt's own, or
// response.completed with resp, with output, the items the client read.
// Its response id is the accepted attempt's, not the first's: a stored
// response (store defaults to true) is continued with
// previous_response_id, and the server's record of the accepted attempt
// is the one that holds the calls the client read (the first attempt's
// holds the rejected ones). No accumulator compares it with
// response.created's.
func (g *responsesGate) end(resp []byte, output [][]byte) error {
	term := streamEvent{Event: "response.completed", Data: []byte(`{"type":"response.completed","response":{}}`)}
	if n := len(g.terminal); n > 0 {
		term = g.terminal[n-1]
	} else {
		var err error
		if term.Data, err = setAt(term.Data, nil, "response", resp); err != nil {
			return err
		}
	}
	b, err := setAt(term.Data, []any{"response"}, "output", append(append([]byte("["), joinRaw(output)...), ']'))
	if err != nil {
		return err
	}
	return g.send(term.Event, b)
}

// created writes response.created for resp, as an upstream starts its
// stream: in progress, without output.
func (g *responsesGate) created(resp []byte) error {
	r, err := root(resp)
	if err != nil {
		return err
	}
	c, err := dropMembers(resp, r, func(m member) bool { return m.key == "output" || m.key == "usage" })
	if err == nil {
		c, err = setAt(c, nil, "output", []byte("[]"))
	}
	if err == nil {
		c, err = setAt(c, nil, "status", []byte(`"in_progress"`))
	}
	if err != nil {
		return err
	}
	if g.id, err = optStr(resp, r, "id"); err != nil {
		return err
	}
	return g.emit("response.created", "response", c)
}

func (g *responsesGate) reject() {
	if g.attempt == 0 {
		// Keep the items the client read, whole, for the terminal event's
		// output.
		g.shown = nil
		if resp, err := g.asm.response(); err == nil {
			if items, _, _, err := responsesOutput(resp); err == nil {
				for i := 0; i < g.passed && i < len(items); i++ {
					g.shown = append(g.shown, raw(resp, items[i]))
				}
			}
		}
	}
	g.attempt++
	g.asm = &responsesAssembler{}
	g.holding = false
	g.terminal = nil
	g.held, g.heldBytes = nil, 0
}

func (g *responsesGate) fail(typ, msg string) error {
	if g.ended {
		return nil
	}
	g.ended = true
	if err := g.emit("error", "code", typ, "message", msg, "param", []byte("null")); err != nil {
		return err
	}
	resp := []byte(`{"object":"response","status":"failed","output":[]}`)
	var err error
	if g.id != "" {
		resp, err = setAt(resp, nil, "id", marshalString(g.id))
	}
	if err == nil {
		var e []byte
		if e, err = marshal(struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}{typ, msg}); err == nil {
			resp, err = setAt(resp, nil, "error", e)
		}
	}
	if err != nil {
		return err
	}
	return g.emit("response.failed", "response", resp)
}

func (g *responsesGate) abort(ev streamEvent) error {
	if g.ended {
		return nil
	}
	g.ended = true
	return g.send(ev.Event, ev.Data)
}

// opening reports whether ev only opens the stream: the events that
// create the response and open an item or a part carry nothing of the
// answer yet.
func (responsesWire) opening(ev streamEvent) bool {
	switch responsesEventType(ev) {
	case "response.created", "response.in_progress", "response.queued", "response.output_item.added", "response.content_part.added":
		return true
	}
	return false
}

// responsesEventType is ev's type: its parsed form's when a gate parsed
// it, else read from its data ("" when it has none).
func responsesEventType(ev streamEvent) string {
	if e, ok := ev.parsed.(*responsesEvent); ok {
		return e.Type
	}
	return dataType(ev.Data)
}

// framing: server-sent events.
func (responsesWire) framing() framing { return sseFraming{} }
