package httpguard

import (
	"context"
	"net/http"

	"github.com/toolguard/toolguard/guard"
)

// request is one request of a logical call through a [Transport], as the
// stages see it: the client's request, or a re-ask built on it.
type request struct {
	proto wireProtocol
	// wire is what the transport read of the client's body: model, tools,
	// server-side state. A re-ask offers the same tools.
	wire wireRequest
	// body is this request's JSON body.
	body []byte
	// http is the client's request: method, URL with its query, headers.
	// Every upstream request is a clone of it with body.
	http *http.Request
	// sink is where this request's stream goes (a stage's gate, or the
	// client's stream); nil when the request does not stream.
	sink *gateSink
	// client is the client's stream; nil when the request does not
	// stream.
	client *clientStream
	// direct marks a streaming request that offers no tools: its answer
	// is handed on as the upstream streams it (sendUpstream), with no
	// gate and no bound.
	direct bool
	// unread, when not nil, says why the client's request could not be
	// read although it offers tools: it is sent as it came, and its answer
	// is handed on unread (see passUnread).
	unread error
	// tools are wire's tools as the stages see them, made once
	// (stageTools): every stage of a logical call asks for them, and a
	// re-ask or a stream's attempt, a copy of the request, offers the same.
	tools     []guard.Tool
	toolsMade bool
}

// response is one answer as the stages see it: an upstream response read
// whole (a stream assembled into the sync response it amounts to), a
// stand-in answer, or an upstream response the transport cannot read.
type response struct {
	proto  wireProtocol
	body   []byte // the JSON body; nil for pass
	status int
	// header is the answer's header: the upstream's, or one a stage made.
	// The client receives it (syncResponse).
	header http.Header
	// standIn marks an answer a stage made (Codec.End); cause is the
	// error it stands for.
	standIn bool
	cause   error
	// pass is an upstream response the transport cannot guard (past the
	// body bound, in an encoding it cannot decode, not the protocol's
	// shape), handed on with its body unread (or as read so far); unread
	// says why (an *unguardableError that holds pass, so that a refusal
	// closes it).
	pass   *http.Response
	unread error
	// calls are body's tool calls, read once; nil until read.
	calls []wireCall
	// text is body's answer text, read once (answerText); nil until read.
	text *string
	// origin is the gate that assembled body from an upstream stream; nil
	// for a sync answer and a stand-in.
	origin *gateSink
	// asm is the assembler of a streamed answer whose body is not built
	// yet (content builds it); nil once built, and for any other answer.
	asm assembler
}

// content returns resp's JSON body; nil for pass. A streamed answer's
// body is assembled the first time it is read: one whose calls the
// stages accept unchanged is handed on without it (gateSink.release).
func (resp *response) content() ([]byte, error) {
	if resp.body == nil && resp.asm != nil {
		b, err := resp.asm.response()
		if err != nil {
			return nil, err
		}
		resp.body, resp.asm = b, nil
	}
	return resp.body, nil
}

// toolCalls returns resp's tool calls, read once.
func (resp *response) toolCalls() ([]wireCall, error) {
	if resp.calls != nil {
		return resp.calls, nil
	}
	body, err := resp.content()
	if err != nil || body == nil {
		return nil, err
	}
	cs, err := resp.proto.calls(body)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		cs = []wireCall{}
	}
	resp.calls = cs
	return cs, nil
}

// codec is the wire host of package guard's stages. It is stateless: what a
// call needs travels in its request and response.
type codec struct{}

var (
	_ guard.Codec[*request, *response]           = codec{}
	_ guard.TranscriptReader[*request]           = codec{}
	_ guard.MalformedReader[*request, *response] = codec{}
)

// Request returns the function tools req offers, with their JSON Schemas,
// the model it names (Gemini's from the path) and, for a streaming
// request, its stream.
func (codec) Request(_ context.Context, req *request) guard.RequestInfo[*request, *response] {
	info := guard.RequestInfo[*request, *response]{Model: req.wire.Model, Tools: stageTools(req)}
	if req.sink != nil {
		info.Stream = &stageStream{parent: req.sink, client: req.client}
	}
	return info
}

// stageTools returns the function tools req offers, with their JSON
// Schemas, made once for the request and the copies made of it.
func stageTools(req *request) []guard.Tool {
	if req.toolsMade {
		return req.tools
	}
	tools := make([]guard.Tool, len(req.wire.Tools))
	for i, t := range req.wire.Tools {
		tools[i].Name = t.Name
		switch {
		case t.Err != nil:
			tools[i].Schema = unusableSchema{t.Err}
		case t.Schema != nil:
			tools[i].Schema = t.Schema
		}
	}
	req.tools, req.toolsMade = tools, true
	return tools
}

// Response returns resp's tool calls, in order; for a response without
// calls, its answer text; for an answer End made, its cause. The transport
// reads a response's calls before it hands it to the stages, and hands on
// unread a response whose calls it cannot read: Unreadable says why.
func (codec) Response(_ *request, resp *response) guard.ResponseInfo {
	if resp.unread != nil {
		return guard.ResponseInfo{Unreadable: resp.unread}
	}
	info := guard.ResponseInfo{Calls: wireToCalls(resp)}
	if resp.standIn {
		info.StandIn = resp.cause
	}
	if len(info.Calls) == 0 {
		info.Text = answerText(resp)
	}
	return info
}

// wireToCalls returns resp's tool calls as the stages see them.
func wireToCalls(resp *response) []guard.Call {
	cs, err := resp.toolCalls()
	if err != nil {
		return nil
	}
	out := make([]guard.Call, len(cs))
	for i, c := range cs {
		args := c.Args
		if args == nil {
			args = []byte{}
		}
		out[i] = guard.Call{ID: c.ID, Name: c.Name, Args: args}
	}
	return out
}

// Accept writes each verdict's cleaned arguments into resp's JSON, where
// every SDK's accessor reads them; nothing else of the body changes.
func (codec) Accept(resp *response, vs []guard.Verdict) (*response, error) {
	args := make([][]byte, len(vs))
	changed := false
	for i, v := range vs {
		args[i] = v.Args
		changed = changed || v.Args != nil
	}
	if !changed {
		return resp, nil
	}
	content, err := resp.content()
	if err != nil {
		return nil, err
	}
	body, err := resp.proto.accept(content, args)
	if err != nil {
		return nil, err
	}
	out := *resp
	out.body, out.calls, out.text, out.asm = body, nil, nil, nil
	if cs, err := resp.toolCalls(); err == nil && len(cs) == len(args) {
		// The calls of the new body: the old ones with the arguments
		// written, as every protocol's calls reads them back.
		out.calls = append([]wireCall(nil), cs...)
		for i, a := range args {
			if a != nil {
				out.calls[i].Args = a
			}
		}
	}
	return &out, nil
}

// Reask returns req's body followed by resp's turn replayed as it came (with
// the arguments the answers show instead where they differ) and one tool
// result per call, in the protocol's shape. A request that continues
// server-side conversation state is never re-asked: a *[ServerStateError].
func (codec) Reask(req *request, resp *response, as []guard.Answer) (*request, error) {
	if state := req.wire.State.continues(); state != "" {
		return nil, newServerStateError(state, as)
	}
	replayed, err := resp.content()
	if err != nil {
		return nil, err
	}
	args := make([][]byte, len(as))
	changed := false
	for i, a := range as {
		args[i] = a.Args
		changed = changed || a.Args != nil
	}
	if changed {
		if replayed, err = resp.proto.accept(replayed, args); err != nil {
			return nil, err
		}
	}
	answers := make([]wireAnswer, len(as))
	for i, a := range as {
		answers[i] = wireAnswer{Content: a.Content, IsError: a.Refused}
	}
	body, err := req.proto.reask(req.body, replayed, answers)
	if err != nil {
		return nil, err
	}
	out := *req
	out.body = body
	return &out, nil
}

// unreadText is the text of a response the transport cannot read: not
// empty, so that ToolArgValidation does not take it for an empty answer.
const unreadText = "(not read: passed through unguarded)"

// answerText returns resp's answer text.
// It is read once: every stage that reads a response without tool calls
// asks for it.
func answerText(resp *response) string {
	if resp.text != nil {
		return *resp.text
	}
	text := unreadText
	if body, err := resp.content(); err == nil && body != nil {
		if t, err := resp.proto.text(body); err == nil {
			text = t
		}
	}
	resp.text = &text
	return text
}

// End returns an answer in req's protocol without tool calls whose text is
// text: a 200 response as the provider would give it.
func (codec) End(req *request, text string, cause error) *response {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return &response{proto: req.proto, body: req.proto.end(req.wire.Model, text), status: http.StatusOK,
		header: h, standIn: true, cause: cause}
}

// Transcript reads the messages of req's body (see each protocol's
// transcript).
func (codec) Transcript(_ context.Context, req *request) []guard.Message {
	return req.proto.transcript(req.body)
}
