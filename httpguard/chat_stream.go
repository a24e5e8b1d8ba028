package httpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// chatChunk is what the wire code reads of a chat.completion.chunk. The
// tags say how a member maps to a field; parseChatChunk reads them by hand.
type chatChunk struct {
	ID                string          `json:"id"`
	Created           json.RawMessage `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint *string         `json:"system_fingerprint"`
	ServiceTier       *string         `json:"service_tier"`
	Choices           []chatChoice    `json:"choices"`
	Usage             json.RawMessage `json:"usage"`
	Error             json.RawMessage `json:"error"`
	// The storage the decoder decodes into (see chat_decode.go): Choices
	// when it holds one, and the strings of the two pointers.
	one                      [1]chatChoice
	fingerprint, serviceTier string
}

type chatChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
	finish       string    // FinishReason's storage
}

type chatDelta struct {
	Role      string              `json:"role"`
	Content   *string             `json:"content"`
	Refusal   *string             `json:"refusal"`
	ToolCalls []chatToolCallDelta `json:"tool_calls"`
	// FunctionCall is a legacy function_call, which the guard cannot
	// read (the assembler refuses it).
	FunctionCall json.RawMessage `json:"function_call"`
	// more: a member other than role holds a value other than "" and
	// null, whether the struct keeps it or not (reasoning_content): the
	// delta carries something of the answer (chatDeltaOpening).
	more bool
	// Storage: of Content and Refusal, and of ToolCalls when it holds one.
	content, refusal string
	oneCall          [1]chatToolCallDelta
}

type chatToolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	// Custom is a custom (freeform) tool call's part.
	Custom struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom"`
	index int // Index's storage
}

// parseChatChunk reads a chunk as encoding/json would decode it into a
// chatChunk (keys matched without regard to case, null leaving a field
// unset, a value of another type an error), in one pass over the bytes
// without reflection; but a key read twice in one object is an error, as
// everywhere in the wire code (a guard must never check one value while a
// client reads another).
func parseChatChunk(data []byte) (*chatChunk, error) {
	c := new(chatChunk)
	if err := parseChatChunkInto(data, c, nil); err != nil {
		return nil, err
	}
	return c, nil
}

// parseChatChunkInto is parseChatChunk into c, a zero chunk, sharing the
// strings spelled alike with prev, the stream's chunk before (nil for
// none).
func parseChatChunkInto(data []byte, c, prev *chatChunk) error {
	if err := decodeChatChunkAfter(data, c, prev); err != nil {
		return unguardable("unreadable chat chunk", fmt.Errorf("%w: chat chunk: %w", errJSON, err))
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return &upstreamStreamError{Data: append([]byte(nil), data...)}
	}
	return nil
}

// chatCallAcc is one tool call being assembled: a function call's name and
// arguments, or a custom call's name and input.
type chatCallAcc struct {
	id, typ      string
	name         string // its parts joined: most calls name themselves in one
	args         []byte
	custom       bool // a custom part came (custom.name or custom.input)
	functionPart bool // a function part came (function.name or function.arguments)
}

// chatAssembler assembles chat.completion.chunk events into a
// chat.completion: choice 0, the one the guard reads. The parts of other
// choices (a request's n > 1) are not assembled: such a stream is
// unguardable as soon as any choice holds tool calls, and its text passes
// as it comes. The bound is on what it holds (names, arguments, inputs,
// text, ids), not on the events' size.
type chatAssembler struct {
	budget
	started                  bool
	id, model                string
	created                  json.RawMessage
	fingerprint, serviceTier *string
	role                     string
	content, refusal         []byte
	hasContent, hasRefusal   bool
	parts                    []chatCallAcc // the tool calls, in order of index
	finish                   *string
	usage                    json.RawMessage
	// several: a choice other than 0 came; otherCalls: one held tool
	// calls.
	several, otherCalls bool
	last                *chatChunk // the chunk add took last
	// slab is where add parses the chunks no gate parsed before it:
	// allocated a few at a time, each slab as long as the stream so far
	// (from chatSlabMin up to chatSlabMax chunks), so that a stream of n
	// chunks makes about log n allocations of them, not n, and never
	// holds more unused than it parsed. A chunk is never reused: what add
	// parses is handed on, and held, with the event.
	slab []chatChunk
	// parsed counts the chunks parsed into slabs.
	parsed int
	// partsIn is the storage of parts, made with the assembler: the calls
	// of most answers.
	partsIn [4]chatCallAcc
}

// The bounds of a slab of chunks (chatAssembler.slab).
const (
	chatSlabMin = 4
	chatSlabMax = 64
)

// newChunk returns the next free chunk of the slab, a new slab when it is
// used up.
func (a *chatAssembler) newChunk() *chatChunk {
	if len(a.slab) == 0 {
		a.slab = make([]chatChunk, min(max(a.parsed, chatSlabMin), chatSlabMax))
	}
	c := &a.slab[0]
	a.slab = a.slab[1:]
	a.parsed++
	return c
}

// holdsCalls reports whether d holds a tool call part or a legacy
// function_call.
func (d *chatDelta) holdsCalls() bool {
	return len(d.ToolCalls) > 0 || (len(d.FunctionCall) > 0 && string(d.FunctionCall) != "null")
}

func (a *chatAssembler) add(ev streamEvent) (bool, error) {
	if bytes.Equal(ev.Data, []byte("[DONE]")) {
		return true, nil
	}
	// ev's chunk: the one a gate parsed, else parsed now.
	c, _ := ev.parsed.(*chatChunk)
	if c == nil {
		c = a.newChunk()
		if err := parseChatChunkInto(ev.Data, c, a.last); err != nil {
			return false, err
		}
	}
	a.last = c
	if !a.started {
		a.started = true
		a.id, a.model, a.created, a.fingerprint, a.serviceTier = c.ID, c.Model, c.Created, c.SystemFingerprint, c.ServiceTier
		if err := a.take(len(a.id) + len(a.model) + len(a.created)); err != nil {
			return false, err
		}
	}
	if len(c.Usage) > 0 && string(c.Usage) != "null" {
		a.usage = c.Usage
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		d := &ch.Delta
		if ch.Index != 0 {
			a.several = true
			a.otherCalls = a.otherCalls || d.holdsCalls()
			continue
		}
		if err := a.addDelta(d); err != nil {
			return false, err
		}
		if ch.FinishReason != nil {
			a.finish = ch.FinishReason
		}
	}
	if a.several && (a.otherCalls || len(a.parts) > 0) {
		return false, unguardable("several choices with tool calls", errors.New("a stream of several choices holds tool calls"))
	}
	return false, nil
}

// addCall adds a tool call part. A part of a type other than function and
// custom, or a call given parts of both, is unguardable.
// addDelta accumulates the delta d of choice 0.
func (a *chatAssembler) addDelta(d *chatDelta) error {
	if len(d.FunctionCall) > 0 && string(d.FunctionCall) != "null" {
		return unguardable("legacy function_call", errors.New("delta.function_call"))
	}
	if d.Role != "" {
		a.role = d.Role
	}
	if d.Content != nil {
		if err := a.take(len(*d.Content)); err != nil {
			return err
		}
		a.content = append(a.content, *d.Content...)
		a.hasContent = true
	}
	if d.Refusal != nil {
		if err := a.take(len(*d.Refusal)); err != nil {
			return err
		}
		a.refusal = append(a.refusal, *d.Refusal...)
		a.hasRefusal = true
	}
	for j := range d.ToolCalls {
		if err := a.addCall(&d.ToolCalls[j]); err != nil {
			return err
		}
	}
	return nil
}

func (a *chatAssembler) addCall(tc *chatToolCallDelta) error {
	i := len(a.parts) - 1
	switch {
	case tc.Index != nil && *tc.Index >= 0:
		i = *tc.Index
	case tc.Index == nil && tc.ID != "":
		i = len(a.parts) // no index: a new id is a new call
	}
	if i < 0 || i > len(a.parts) {
		return unguardable("tool call index out of order", fmt.Errorf("tool call index %d after %d calls", i, len(a.parts)))
	}
	if i == len(a.parts) {
		if a.parts == nil {
			a.parts = a.partsIn[:0]
		}
		a.parts = append(a.parts, chatCallAcc{})
	}
	acc := &a.parts[i]
	if tc.ID != "" {
		acc.id = tc.ID
	}
	switch tc.Type {
	case "", "function", "custom":
		if tc.Type != "" {
			acc.typ = tc.Type
		}
	default:
		return unguardable("tool call of an unknown type", fmt.Errorf("tool call %d of type %q", i, tc.Type))
	}
	fn, cu := &tc.Function, &tc.Custom
	acc.functionPart = acc.functionPart || fn.Name != "" || fn.Arguments != ""
	acc.custom = acc.custom || cu.Name != "" || cu.Input != ""
	if acc.functionPart && acc.custom || acc.functionPart && acc.typ == "custom" || acc.custom && acc.typ == "function" {
		return unguardable("tool call of an unknown type", fmt.Errorf("tool call %d has both function and custom parts", i))
	}
	if err := a.take(len(tc.ID) + len(fn.Name) + len(fn.Arguments) + len(cu.Name) + len(cu.Input)); err != nil {
		return err
	}
	acc.name += fn.Name + cu.Name
	acc.args = append(append(acc.args, fn.Arguments...), cu.Input...)
	return nil
}

// calls implements assembler.calls: the function calls of choice 0 as
// chatWire.calls reads them from response() (a custom call's input is not
// guarded, so it is left out), read from the parts the assembler holds.
// Nothing can fail here that add did not refuse already: response() fails
// only on a raw value that is not JSON, and every event was checked whole.
// Args shares the assembler's bytes, capped so that an append copies; it
// is empty, not nil, for a call that sent no arguments, as read back.
func (a *chatAssembler) calls() ([]wireCall, error) {
	out := make([]wireCall, 0, len(a.parts))
	for i := range a.parts {
		c := &a.parts[i]
		if c.typ == "custom" || c.custom {
			continue
		}
		args := []byte{}
		if c.args != nil {
			args = c.args[:len(c.args):len(c.args)]
		}
		out = append(out, wireCall{ID: c.id, Name: c.name, Args: args})
	}
	return out, nil
}

func (a *chatAssembler) response() ([]byte, error) {
	created := a.created
	if len(created) == 0 {
		created = json.RawMessage("0")
	}
	usage := a.usage
	if len(usage) == 0 {
		usage = json.RawMessage("null")
	}
	return marshal(struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		Created           json.RawMessage `json:"created"`
		Model             string          `json:"model"`
		Choices           []any           `json:"choices"`
		Usage             json.RawMessage `json:"usage"`
		SystemFingerprint *string         `json:"system_fingerprint,omitempty"`
		ServiceTier       *string         `json:"service_tier,omitempty"`
	}{a.id, "chat.completion", created, a.model, []any{struct {
		Index        int                  `json:"index"`
		Message      chatAssembledMessage `json:"message"`
		Logprobs     any                  `json:"logprobs"`
		FinishReason *string              `json:"finish_reason"`
	}{0, a.message(), nil, a.finish}}, usage, a.fingerprint, a.serviceTier})
}

// chatAssembledMessage is the message of an assembled response.
type chatAssembledMessage struct {
	Role      string              `json:"role"`
	Content   *string             `json:"content"`
	Refusal   *string             `json:"refusal"`
	ToolCalls []chatAssembledCall `json:"tool_calls,omitempty"`
}

// chatAssembledCall is a tool call of an assembled response: a function
// call or a custom tool call.
type chatAssembledCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function,omitempty"`
	Custom *struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom,omitempty"`
}

// message is the message the stream's choice 0 amounts to.
func (a *chatAssembler) message() chatAssembledMessage {
	m := chatAssembledMessage{Role: a.role}
	if m.Role == "" {
		m.Role = "assistant"
	}
	if a.hasContent {
		s := string(a.content)
		m.Content = &s
	}
	if a.hasRefusal {
		s := string(a.refusal)
		m.Refusal = &s
	}
	for _, c := range a.parts {
		call := chatAssembledCall{ID: c.id, Type: "function"}
		if c.typ == "custom" || c.custom {
			call.Type = "custom"
			call.Custom = &struct {
				Name  string `json:"name"`
				Input string `json:"input"`
			}{c.name, string(c.args)}
		} else {
			call.Function = &struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			}{c.name, string(c.args)}
		}
		m.ToolCalls = append(m.ToolCalls, call)
	}
	return m
}

// chatGate is the streamGate of Chat Completions. The client's chunks all
// carry the first attempt's id (openai.ChatCompletionAccumulator refuses a
// chunk with another); synthesized chunks are copies of the first chunk
// with their choices replaced.
//
// The first attempt's chunks that the gate does not pass at once (tool
// call parts, text after them, finish and usage chunks) are kept as they
// came, with their parsed forms, so that an attempt whose calls the stages
// accept unchanged ends with them (release) rather than with chunks built
// anew from the assembled response (accept).
type chatGate struct {
	w        io.Writer
	attempt  int
	asm      *chatAssembler
	id       string
	template []byte // the first chunk of the first attempt
	holding  bool
	// passedContent and passedRefusal are the bytes of content and refusal
	// the client has read.
	passedContent, passedRefusal int
	terminal                     [][]byte // the attempt's held finish and usage chunks
	// held are the first attempt's chunks not passed, in order (the
	// terminal ones too), for release; heldN counts the bytes of those that
	// are not terminal (the assembler's budget counts the terminal ones).
	// unreleasable: the attempt cannot end with them (see keep).
	held         []streamEvent
	heldN        int
	unreleasable bool
	ended        bool
	first        chatAssembler // the first attempt's assembler, made with the gate
	// The storage of terminal and held, made with the gate: the finish
	// and usage chunks of a stream, and the chunks of a short one.
	terminalIn [2][]byte
	heldIn     [8]streamEvent
}

func newChatGate(w io.Writer) *chatGate {
	g := &chatGate{w: w}
	g.asm = &g.first
	return g
}

func (g *chatGate) event(ev streamEvent) (bool, error) {
	if g.ended {
		return true, nil
	}
	done, err := g.asm.add(ev)
	if err != nil || done {
		return done, err
	}
	c := g.asm.last // add parsed it
	if g.template == nil {
		// Data is the event's own (a reader's fresh slice, never written
		// to): kept as it is.
		g.template, g.id = ev.Data, c.ID
	}
	calls, terminal := false, len(c.Choices) == 0
	for _, ch := range c.Choices {
		calls = calls || len(ch.Delta.ToolCalls) > 0
		terminal = terminal || ch.FinishReason != nil
	}
	switch {
	case terminal:
		// Held until the end: bounded with what the assembler holds.
		if err := g.asm.take(len(ev.Data)); err != nil {
			return false, err
		}
		if g.terminal == nil {
			g.terminal = g.terminalIn[:0]
		}
		g.terminal = append(g.terminal, ev.Data)
		g.keep(ev.Data, c, calls, true)
	case calls:
		g.holding = true
		g.keep(ev.Data, c, true, false)
	case g.attempt == 0 && !g.holding:
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue // not assembled: its text passes and is not written again
			}
			if ch.Delta.Content != nil {
				g.passedContent += len(*ch.Delta.Content)
			}
			if ch.Delta.Refusal != nil {
				g.passedRefusal += len(*ch.Delta.Refusal)
			}
		}
		return false, writeEvent(g.w, streamEvent{Data: ev.Data, parsed: c})
	default:
		g.keep(ev.Data, c, false, false)
	}
	return false, nil
}

// keep holds the first attempt's chunk data (parsed as c, calls when it
// holds tool call parts) for release, unless what accept would write in
// its place differs in what a client reads: a call part without an index
// (the assembler places it by its id or after the last; an SDK's
// accumulator by its index, 0 when absent), a chunk with another id than
// the first (accept writes the first's), bytes that are not UTF-8 (accept
// writes what the guard decoded). Nor past the bound: the held chunks and
// the assembler's parts together stay within MaxBody, or the chunks are
// dropped and the attempt ends by accept, as a later one does.
func (g *chatGate) keep(data []byte, c *chatChunk, calls, terminal bool) {
	if g.attempt > 0 || g.unreleasable {
		return
	}
	if !terminal {
		g.heldN += len(data)
	}
	ok := c.ID == g.id && g.asm.n+g.heldN <= MaxBody && utf8.Valid(data)
	for i := 0; ok && calls && i < len(c.Choices); i++ {
		for _, tc := range c.Choices[i].Delta.ToolCalls {
			ok = ok && tc.Index != nil && *tc.Index >= 0
		}
	}
	if !ok {
		g.held, g.heldN, g.unreleasable = nil, 0, true
		return
	}
	if g.held == nil {
		g.held = g.heldIn[:0]
	}
	g.held = append(g.held, streamEvent{Data: data, parsed: c})
}

// release implements streamGate.release: it ends the first attempt with the chunks
// it held, as they came (their event names aside, which the gate never
// writes), then what accept would add that the upstream did not send: a
// finish chunk when none came, and [DONE]. It cannot (false, nothing
// written) on a later attempt, when keep refused a chunk, or when a call
// never named its type (accept writes "function").
func (g *chatGate) release() (bool, error) {
	if g.ended || g.attempt > 0 || g.unreleasable || g.template == nil {
		return false, nil
	}
	for _, p := range g.asm.parts {
		if p.typ == "" {
			return false, nil
		}
	}
	g.ended = true
	if err := writeEvents(g.w, g.held); err != nil {
		return true, err
	}
	if len(g.terminal) == 0 {
		if err := g.writeFinish(g.asm.finish); err != nil {
			return true, err
		}
	}
	return true, writeEvent(g.w, streamEvent{Data: []byte("[DONE]")})
}

func (g *chatGate) response() ([]byte, error) { return g.asm.response() }

func (g *chatGate) current() assembler { return g.asm }

// chunk is the template with choices replaced (and usage null when the
// template has usage).
func (g *chatGate) chunk(choices []byte) ([]byte, error) {
	t := g.template
	r, err := root(t)
	if err != nil {
		return nil, err
	}
	e1, err := setMember(t, r, "choices", choices)
	if err != nil {
		return nil, err
	}
	edits := []edit{e1}
	if u, ok, err := field(t, r, "usage"); err != nil {
		return nil, err
	} else if ok {
		edits = append(edits, edit{at: u, text: []byte("null")})
	}
	return apply(t, edits...), nil
}

func (g *chatGate) accept(resp []byte) error {
	if g.ended {
		return nil
	}
	g.ended = true
	var r chatAccepted
	if err := decodeResponse(resp, &r); err != nil {
		return err
	}
	if len(r.Choices) != 1 {
		return fmt.Errorf("%w: accepted response", errJSON)
	}
	var first chatDeltaOut // the role, when no chunk reached the client before
	if g.template == nil {
		if err := g.start(r); err != nil {
			return err
		}
		first.Role = "assistant"
	}
	out, err := g.acceptedChoices(r.Choices[0].Message, first)
	if err != nil {
		return err
	}
	for _, ev := range out {
		c, err := g.chunk(ev)
		if err != nil {
			return err
		}
		if err := writeEvent(g.w, streamEvent{Data: c}); err != nil {
			return err
		}
	}
	return g.end(r.Choices[0].FinishReason)
}

// chatAccepted is what accept reads of the accepted response.
type chatAccepted struct {
	ID                string          `json:"id"`
	Created           json.RawMessage `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint *string         `json:"system_fingerprint,omitempty"`
	Choices           []struct {
		Message      chatAcceptedMessage `json:"message"`
		FinishReason *string             `json:"finish_reason"`
	} `json:"choices"`
}

type chatAcceptedMessage struct {
	Content   *string           `json:"content"`
	Refusal   *string           `json:"refusal"`
	ToolCalls []json.RawMessage `json:"tool_calls"`
}

// chatDeltaOut is the delta of a chunk the gate writes.
type chatDeltaOut struct {
	Role    string            `json:"role,omitempty"`
	Content *string           `json:"content,omitempty"`
	Refusal *string           `json:"refusal,omitempty"`
	Calls   []json.RawMessage `json:"tool_calls,omitempty"`
}

// chatChoiceOut is the choices of a chunk the gate writes: choice 0 with
// delta d and finish.
func chatChoiceOut(d chatDeltaOut, finish *string) ([]byte, error) {
	return marshal([]any{struct {
		Index        int          `json:"index"`
		Delta        chatDeltaOut `json:"delta"`
		Logprobs     any          `json:"logprobs"`
		FinishReason *string      `json:"finish_reason"`
	}{0, d, nil, finish}})
}

// start makes the template when no chunk of any attempt came (a stand-in
// answer): the stream starts at accept, with r's id.
func (g *chatGate) start(r chatAccepted) error {
	if len(r.Created) == 0 {
		r.Created = json.RawMessage("0")
	}
	t, err := marshal(struct {
		ID                string          `json:"id"`
		Object            string          `json:"object"`
		Created           json.RawMessage `json:"created"`
		Model             string          `json:"model"`
		SystemFingerprint *string         `json:"system_fingerprint,omitempty"`
		Choices           []any           `json:"choices"`
	}{r.ID, "chat.completion.chunk", r.Created, r.Model, r.SystemFingerprint, []any{}})
	if err != nil {
		return err
	}
	g.template, g.id = t, r.ID
	return nil
}

// acceptedChoices returns the choices of the chunks that write m past
// what the client has read: its text (after first's role, if any), then
// each tool call whole, with its index in the client's stream.
//
// The text: for the first attempt what the client has not read yet; for a
// later one without tool calls (the model answered in text after a
// re-ask, or a stand-in answer) its whole text, since that text is the
// answer; for a later one with calls none (its preamble would repeat the
// first attempt's).
func (g *chatGate) acceptedChoices(m chatAcceptedMessage, first chatDeltaOut) ([][]byte, error) {
	var out [][]byte
	passedContent, passedRefusal := g.passedContent, g.passedRefusal
	text := g.attempt == 0 || len(m.ToolCalls) == 0
	if g.attempt > 0 {
		passedContent, passedRefusal = 0, 0
	}
	d := first
	if text && m.Content != nil && len(*m.Content) > passedContent {
		s := (*m.Content)[passedContent:]
		d.Content = &s
	}
	if text && m.Refusal != nil && len(*m.Refusal) > passedRefusal {
		s := (*m.Refusal)[passedRefusal:]
		d.Refusal = &s
	}
	if d.Role != "" || d.Content != nil || d.Refusal != nil {
		ch, err := chatChoiceOut(d, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	for i, tc := range m.ToolCalls {
		b := []byte(tc)
		r, err := root(b)
		if err != nil {
			return nil, err
		}
		e, err := setMember(b, r, "index", []byte(fmt.Sprint(i)))
		if err != nil {
			return nil, err
		}
		ch, err := chatChoiceOut(chatDeltaOut{Calls: []json.RawMessage{apply(b, e)}}, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// end writes the attempt's held terminal chunks (a finish chunk with
// finish when none was held), then [DONE].
func (g *chatGate) end(finish *string) error {
	if len(g.terminal) == 0 {
		if err := g.writeFinish(finish); err != nil {
			return err
		}
	}
	for _, t := range g.terminal {
		c, err := g.terminalChunk(t)
		if err != nil {
			return err
		}
		if err := writeEvent(g.w, streamEvent{Data: c}); err != nil {
			return err
		}
	}
	return writeEvent(g.w, streamEvent{Data: []byte("[DONE]")})
}

// writeFinish writes a chunk of the template with an empty delta and
// finish: the end of an attempt whose upstream sent no finish chunk.
func (g *chatGate) writeFinish(finish *string) error {
	ch, err := chatChoiceOut(chatDeltaOut{}, finish)
	if err != nil {
		return err
	}
	c, err := g.chunk(ch)
	if err != nil {
		return err
	}
	return writeEvent(g.w, streamEvent{Data: c})
}

// terminalChunk is a held finish or usage chunk with the first attempt's id
// and empty deltas: what its deltas held is written before it.
func (g *chatGate) terminalChunk(t []byte) ([]byte, error) {
	r, err := root(t)
	if err != nil {
		return nil, err
	}
	var edits []edit
	if id, ok, err := field(t, r, "id"); err != nil {
		return nil, err
	} else if ok {
		edits = append(edits, edit{at: id, text: marshalString(g.id)})
	}
	if chs, ok, err := field(t, r, "choices"); err != nil {
		return nil, err
	} else if ok {
		es, err := arrayElems(t, chs)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if d, ok, err := field(t, e, "delta"); err != nil {
				return nil, err
			} else if ok {
				edits = append(edits, edit{at: d, text: []byte("{}")})
			}
		}
	}
	return apply(t, edits...), nil
}

func (g *chatGate) reject() {
	g.attempt++
	g.asm = &chatAssembler{}
	g.holding = false
	g.terminal = nil
	g.held, g.heldN = nil, 0
	// What the attempt held is dropped, not kept alive by the storage.
	clear(g.terminalIn[:])
	clear(g.heldIn[:])
}

func (g *chatGate) fail(typ, msg string) error {
	if g.ended {
		return nil
	}
	g.ended = true
	return writeEvent(g.w, streamEvent{Data: openAIErrorBody(typ, msg)})
}

func (g *chatGate) abort(ev streamEvent) error {
	if g.ended {
		return nil
	}
	g.ended = true
	return writeEvent(g.w, streamEvent{Data: ev.Data})
}

// opening reports whether ev only opens the stream: from the chunk a gate
// parsed when ev carries it, else from the bytes (chatOpening), with the
// same answer.
func (chatWire) opening(ev streamEvent) bool {
	if c, ok := ev.parsed.(*chatChunk); ok {
		return c.opening()
	}
	return chatOpening(ev.Data)
}

// opening is chatOpening of the chunk's bytes, read from what the decoder
// kept of them: no usage, and in every choice no finish_reason and a delta
// with nothing but its role (chatDelta.more).
func (c *chatChunk) opening() bool {
	if len(c.Usage) > 0 && c.Usage[0] != 'n' {
		return false
	}
	for i := range c.Choices {
		if c.Choices[i].FinishReason != nil || c.Choices[i].Delta.more {
			return false
		}
	}
	return true
}

// chatOpening reports whether a chat chunk only opens the stream: no
// usage, and in every choice no finish_reason and a delta whose members
// other than role are "" or null (the role alone). Any other member of the
// delta counts (content, tool_calls, a server's own such as
// reasoning_content), and so does a chunk that is not what a chunk
// decodes from. It reads the bytes in place.
func chatOpening(b []byte) bool {
	if !validJSON(b) {
		return false
	}
	r, err := root(b)
	if err != nil {
		return false
	}
	if kind(b, r) == 'n' {
		return true
	}
	it, err := iterMembers(b, r)
	if err != nil {
		return false
	}
	for it.next() {
		switch {
		case it.is("usage"):
			if kind(b, it.v) != 'n' {
				return false
			}
		case it.is("choices"):
			if !chatChoicesOpening(b, it.v) {
				return false
			}
		}
	}
	return it.err == nil
}

func chatChoicesOpening(b []byte, sp span) bool {
	if kind(b, sp) == 'n' {
		return true
	}
	es, err := arrayElems(b, sp)
	if err != nil {
		return false
	}
	for _, e := range es {
		if kind(b, e) == 'n' {
			continue
		}
		it, err := iterMembers(b, e)
		if err != nil {
			return false
		}
		for it.next() {
			switch {
			case it.is("finish_reason"):
				if k := kind(b, it.v); k != 'n' {
					return false
				}
			case it.is("delta"):
				if !chatDeltaOpening(b, it.v) {
					return false
				}
			}
		}
		if it.err != nil {
			return false
		}
	}
	return true
}

func chatDeltaOpening(b []byte, sp span) bool {
	if kind(b, sp) == 'n' {
		return true
	}
	it, err := iterMembers(b, sp)
	if err != nil {
		return false
	}
	for it.next() {
		role, err := keyIs(raw(b, it.k), "role")
		if v := string(raw(b, it.v)); err != nil || (!role && v != `""` && v != "null") {
			return false
		}
	}
	return it.err == nil
}

// framing: server-sent events.
func (chatWire) framing() framing { return sseFraming{} }
