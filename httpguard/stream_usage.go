package httpguard

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// What an observer reads of a streamed answer, without assembling it.
//
// Observe's observers read each upstream answer's usage and finish reasons
// (Transport.send). A sync answer is read from its body. A streamed one
// would have to be assembled into the sync response it amounts to first,
// which a released stream (see stream.go) otherwise never is. So each
// protocol's assembler builds, instead, a stand-in of that response:
// the same bytes but for the answer's content (Anthropic's and Bedrock's
// blocks, Gemini's parts, Chat's and Ollama's message), which is left
// empty, or, for Responses, whose terminal event carries the response
// whole, only the members the protocol's usage and finish read. The
// protocol's own usage and finish then read the stand-in.
//
// That reading is exact: the two decodes read none of the members left out
// (they read the model, the counts and the stop reasons, never the
// content), and decodeResponse reads a member the same whatever the
// members beside it, so long as the whole is JSON that encoding/json takes
// (no deeper than jsonMaxDepth) and the response builds at all. Each
// assembler reports ok false where it cannot be sure of both (a block
// that would not build, a part nested too deep): the response is then
// built and read, as before.

// streamReport is what an observer reads of a streamed answer: its usage
// and its error, as the protocol's usage reads the assembled response, and
// its finish reasons, as finish reads them.
type streamReport struct {
	usage    wireUsage
	usageErr error
	finish   []string
}

// reportOf is the report of body, a response or a stand-in of it, as p's
// usage and finish read it: read in place where p can (plainReporter)
// and the body is JSON that encoding/json takes, else by p's usage and
// finish themselves, each of the two on its own.
func reportOf(p wireProtocol, body []byte) streamReport {
	var r streamReport
	uok, fok := false, false
	if pr, ok := p.(plainReporter); ok && json.Valid(body) {
		r.usage, uok, r.finish, fok = pr.plainReport(body)
	}
	if !uok {
		r.usage, r.usageErr = p.usage(body)
	}
	if !fok {
		r.finish = p.finish(body)
	}
	return r
}

// plainReporter is a protocol that reads what its usage and finish read of
// a body (valid JSON) in place, where the body is plain (plainObject):
// uok and fok say which of the two it read as they would.
type plainReporter interface {
	plainReport(b []byte) (u wireUsage, uok bool, finish []string, fok bool)
}

// oneReason is the finish reasons of a response whose reason is r.
func oneReason(r string) []string {
	if r == "" {
		return nil
	}
	return []string{r}
}

// plainReport reads what chatWire.usage and finish read.
func (chatWire) plainReport(b []byte) (u wireUsage, uok bool, finish []string, fok bool) {
	uok, fok = true, true
	o := plainRoot(b, &uok)
	u.Model = o.str("model")
	if us, ok := o.object("usage"); ok {
		u.Reported = true
		u.InputTokens, _ = us.int("prompt_tokens")
		u.OutputTokens, _ = us.int("completion_tokens")
	}
	o = plainRoot(b, &fok)
	reason := func(c plainObject) { c.str("finish_reason") }
	if c, ok := o.first("choices", reason); ok {
		finish = oneReason(c.str("finish_reason"))
	}
	return u, uok, finish, fok
}

// plainReport reads what responsesWire.usage and finish read.
func (responsesWire) plainReport(b []byte) (u wireUsage, uok bool, finish []string, fok bool) {
	uok, fok = true, true
	o := plainRoot(b, &uok)
	u.Model = o.str("model")
	if us, ok := o.object("usage"); ok {
		u.Reported = true
		u.InputTokens, _ = us.int("input_tokens")
		u.OutputTokens, _ = us.int("output_tokens")
	}
	o = plainRoot(b, &fok)
	status, reason := o.str("status"), ""
	if d, ok := o.object("incomplete_details"); ok {
		reason = d.str("reason")
	}
	if reason != "" && status != "" {
		return u, uok, []string{reason}, fok
	}
	return u, uok, oneReason(status), fok
}

// plainReport reads what messagesWire.usage and finish read.
func (messagesWire) plainReport(b []byte) (u wireUsage, uok bool, finish []string, fok bool) {
	uok, fok = true, true
	o := plainRoot(b, &uok)
	u.Model = o.str("model")
	if us, ok := o.object("usage"); ok {
		in, _ := us.int("input_tokens")
		creation, _ := us.int("cache_creation_input_tokens")
		read, _ := us.int("cache_read_input_tokens")
		u.Reported, u.InputTokens = true, in+creation+read
		u.OutputTokens, _ = us.int("output_tokens")
	}
	o = plainRoot(b, &fok)
	return u, uok, oneReason(o.str("stop_reason")), fok
}

// plainReport reads what geminiWire.usage and finish read.
func (geminiWire) plainReport(b []byte) (u wireUsage, uok bool, finish []string, fok bool) {
	uok, fok = true, true
	o := plainRoot(b, &uok)
	u.Model = o.str("modelVersion")
	if m, ok := o.object("usageMetadata"); ok {
		u.Reported = true
		u.InputTokens, _ = m.int("promptTokenCount")
		cand, _ := m.int("candidatesTokenCount")
		thoughts, _ := m.int("thoughtsTokenCount")
		u.OutputTokens = cand + thoughts
	}
	o = plainRoot(b, &fok)
	reason := func(c plainObject) { c.str("finishReason") }
	if c, ok := o.first("candidates", reason); ok {
		finish = oneReason(c.str("finishReason"))
	}
	return u, uok, finish, fok
}

// plainReport reads what ollamaWire.usage and finish read.
func (ollamaWire) plainReport(b []byte) (u wireUsage, uok bool, finish []string, fok bool) {
	uok, fok = true, true
	o := plainRoot(b, &uok)
	u.Model = o.str("model")
	in, inSet := o.int("prompt_eval_count")
	out, outSet := o.int("eval_count")
	u.Reported, u.InputTokens, u.OutputTokens = inSet || outSet, in, out
	o = plainRoot(b, &fok)
	return u, uok, oneReason(o.str("done_reason")), fok
}

// plainReport reads what bedrockWire.usage and finish read.
func (bedrockWire) plainReport(b []byte) (u wireUsage, uok bool, finish []string, fok bool) {
	uok, fok = true, true
	o := plainRoot(b, &uok)
	if us, ok := o.object("usage"); ok {
		in, _ := us.int("inputTokens")
		read, _ := us.int("cacheReadInputTokens")
		write, _ := us.int("cacheWriteInputTokens")
		u.Reported, u.InputTokens = true, in+read+write
		u.OutputTokens, _ = us.int("outputTokens")
	}
	o = plainRoot(b, &fok)
	return u, uok, oneReason(o.str("stopReason")), fok
}

// reporter is an assembler that reads its report without assembling the
// response; ok is false when it cannot be sure to read it as from
// response() (see the top of this file).
type reporter interface {
	report(p wireProtocol) (r streamReport, ok bool)
}

// streamReportOf returns the report of asm's response, read from a
// stand-in of it where asm can (reporter), else from the response; an
// error where building the response fails.
func streamReportOf(p wireProtocol, asm assembler) (streamReport, error) {
	if r, ok := asm.(reporter); ok {
		if rep, ok := r.report(p); ok {
			return rep, nil
		}
	}
	body, err := asm.response()
	if err != nil {
		return streamReport{}, err
	}
	return reportOf(p, body), nil
}

// report reads the stand-in of an answer whose message is empty: the
// message is strings and Chat's response() fails only on the raw created
// and usage, which the stand-in holds as they are.
func (a *chatAssembler) report(p wireProtocol) (streamReport, bool) {
	s := *a
	s.content, s.refusal, s.hasContent, s.hasRefusal, s.parts = nil, nil, false, false, nil
	b, err := s.response()
	if err != nil {
		return streamReport{}, false
	}
	return reportOf(p, b), true
}

// report reads, of a stream that ended (its terminal event carries the
// response whole), the members usage and finish read; a stream cut short
// is assembled.
func (a *responsesAssembler) report(p wireProtocol) (streamReport, bool) {
	if a.final == nil {
		return streamReport{}, false
	}
	b, ok := pickMembers(a.final, "model", "usage", "status", "incomplete_details")
	if !ok {
		return streamReport{}, false
	}
	return reportOf(p, b), true
}

// report reads message_start's message with message_delta's delta and
// usage written over it and no blocks, when every block builds (as
// listCalls checks it).
func (a *messagesAssembler) report(p wireProtocol) (streamReport, bool) {
	if a.message == nil {
		return streamReport{}, false
	}
	for _, bl := range a.blocks {
		in, inSet := bl.input()
		if !bl.builds(in, inSet) {
			return streamReport{}, false
		}
	}
	b, err := a.envelope([]byte("[]"))
	if err != nil {
		return streamReport{}, false
	}
	return reportOf(p, b), true
}

// report reads the last chunk with the first candidate, whose content
// holds no parts, when every part nests within what encoding/json reads
// where it is in the response (under five levels: the chunk, candidates,
// the candidate, content, parts).
func (a *geminiAssembler) report(p wireProtocol) (streamReport, bool) {
	for _, part := range a.parts {
		if !json.Valid(part) || !nestsWithin(part, jsonMaxDepth-5) {
			return streamReport{}, false
		}
	}
	s := *a
	s.parts = nil
	b, err := s.assemble()
	if err != nil {
		return streamReport{}, false
	}
	return reportOf(p, b), true
}

// report reads the last line with an empty message, when every tool call
// is JSON that nests within what encoding/json reads where it is in the
// response (under three levels: the line, message, tool_calls).
func (a *ollamaAssembler) report(p wireProtocol) (streamReport, bool) {
	if a.last == nil || !a.done {
		return streamReport{}, false
	}
	for _, tc := range a.toolCalls {
		if !json.Valid(tc) || !nestsWithin(tc, jsonMaxDepth-3) {
			return streamReport{}, false
		}
	}
	b, err := setAt(a.last, nil, "message", []byte("{}"))
	if err != nil {
		return streamReport{}, false
	}
	return reportOf(p, b), true
}

// report reads {"output":{"message":…}} with messageStop's and metadata's
// members and no blocks, when every block builds: text and reasoning
// always do; a toolUse block when its start takes an input, and the start
// and the input nest within what encoding/json reads where they are in the
// response (the start under five levels: the response, output, message,
// content and the block; the input under six).
func (a *bedrockAssembler) report(p wireProtocol) (streamReport, bool) {
	if a.message == nil {
		return streamReport{}, false
	}
	for _, bl := range a.blocks {
		if bl.kind == "text" || bl.kind == "reasoningContent" {
			continue
		}
		tu := []byte(bl.start)
		if _, err := root(tu); err != nil || !takesMember(tu, "input") || !nestsWithin(tu, jsonMaxDepth-5) {
			return streamReport{}, false
		}
		if in := bl.input; len(bytes.TrimSpace(in)) != 0 && json.Valid(in) && !nestsWithin(in, jsonMaxDepth-6) {
			return streamReport{}, false
		}
	}
	r, err := root(a.message)
	if err != nil {
		return streamReport{}, false
	}
	e, err := setMember(a.message, r, "content", []byte("[]"))
	if err != nil {
		return streamReport{}, false
	}
	out := append(append([]byte(`{"output":{"message":`), apply(a.message, e)...), "}}"...)
	for _, src := range [][]byte{a.stop, a.meta} {
		if out, err = mergeMembers(out, src); err != nil {
			return streamReport{}, false
		}
	}
	return reportOf(p, out), true
}

// pickMembers returns an object of the members of the object b named
// keys (at most 8), as b has them, when b is JSON that encoding/json takes
// and each key is in it once, spelled exactly, or not at all (lookup):
// then a decodeResponse of b that reads only keys reads the same of it.
func pickMembers(b []byte, keys ...string) ([]byte, bool) {
	sp, err := root(b)
	if err != nil || kind(b, sp) != '{' || len(keys) > 8 || !json.Valid(b) {
		return nil, false
	}
	var vs [8]span
	n := 2
	for i, k := range keys {
		v, ok, err := lookup(b, sp, k)
		if err != nil {
			return nil, false
		}
		if ok {
			vs[i] = v
			n += len(k) + 4 + v.end - v.start
		}
	}
	out := make([]byte, 1, n)
	out[0] = '{'
	for i, k := range keys {
		if vs[i] == (span{}) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(append(out, '"'), k...), `":`...), raw(b, vs[i])...)
	}
	return append(out, '}'), true
}

// plainObject reads members of a JSON object as decodeResponse reads
// them into a struct's fields, in the plain cases only: a string without
// escapes, an integer of at most 18 digits, null, an object, an array of
// objects. Past any other (an escape, a number with a fraction, a value
// of another kind, a key given twice or in another case, where
// decodeResponse errs or decodes in ways not read here) ok is false, and
// stays false: the caller then reads the body with decodeResponse. Only an
// object of a body that is JSON encoding/json takes (json.Valid) is read.
type plainObject struct {
	b  []byte
	sp span
	ok *bool
}

// plainRoot is the root object of b, which is valid JSON.
func plainRoot(b []byte, ok *bool) plainObject {
	sp, err := root(b)
	if err != nil || kind(b, sp) != '{' {
		*ok = false
	}
	return plainObject{b, sp, ok}
}

// member is the value of key, spelled exactly once (lookup); found is
// false when absent or null (decodeResponse leaves the field as it is).
func (o plainObject) member(key string) (v span, found bool) {
	if !*o.ok {
		return span{}, false
	}
	v, found, err := lookup(o.b, o.sp, key)
	if err != nil {
		*o.ok = false
		return span{}, false
	}
	return v, found && kind(o.b, v) != 'n'
}

// str is the string member key; "" when absent or null.
func (o plainObject) str(key string) string {
	v, found := o.member(key)
	if !found {
		return ""
	}
	s := o.b[v.start:v.end]
	if s[0] != '"' || !utf8.Valid(s) || bytes.IndexByte(s[1:len(s)-1], '\\') >= 0 {
		*o.ok = false
		return ""
	}
	return string(s[1 : len(s)-1])
}

// int is the integer member key; set is false when absent or null.
func (o plainObject) int(key string) (n int64, set bool) {
	v, found := o.member(key)
	if !found {
		return 0, false
	}
	s := o.b[v.start:v.end]
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 18 {
		*o.ok = false
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			*o.ok = false
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// object is the object member key; found is false when absent or null.
func (o plainObject) object(key string) (obj plainObject, found bool) {
	v, found := o.member(key)
	if !found {
		return plainObject{}, false
	}
	if kind(o.b, v) != '{' {
		*o.ok = false
		return plainObject{}, false
	}
	return plainObject{o.b, v, o.ok}, true
}

// first is the first element of the array member key, an object, and
// reads every element with each (each element null or an object, as
// decodeResponse decodes them all); found is false when the array is
// absent, null or empty, or its first element null.
func (o plainObject) first(key string, each func(plainObject)) (obj plainObject, found bool) {
	v, ok := o.member(key)
	if !ok {
		return plainObject{}, false
	}
	if kind(o.b, v) != '[' {
		*o.ok = false
		return plainObject{}, false
	}
	i := skipSpace(o.b, v.start+1)
	for n := 0; *o.ok && i < v.end && o.b[i] != ']'; n++ {
		end, err := valueEnd(o.b, i)
		if err != nil {
			*o.ok = false
			break
		}
		switch e := (span{i, end}); kind(o.b, e) {
		case 'n':
		case '{':
			el := plainObject{o.b, e, o.ok}
			each(el)
			if n == 0 {
				obj, found = el, true
			}
		default:
			*o.ok = false
		}
		if i = skipSpace(o.b, end); i < v.end && o.b[i] == ',' {
			i = skipSpace(o.b, i+1)
		}
	}
	return obj, found && *o.ok
}
