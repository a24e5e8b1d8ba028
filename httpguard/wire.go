package httpguard

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolguard/toolguard/guard"
)

// MaxBody is the bound on what a [Transport] reads of one body to guard
// it: a request body, a response body, a stream's line or event, and a
// stream's assembled response, 8 MiB each, counted decoded when the
// response is compressed. Every reader in the package stops there; a body
// larger than the bound is never buffered whole. A request or sync
// response body past it passes through unguarded, and the transport says
// so at Warn on slog.Default; a stream past it is answered with a 502 of
// type response_too_large (see the package documentation, "Bounds").
const MaxBody = 8 << 20

// errTooLarge reports a body past its bound.
var errTooLarge = errors.New("httpguard: body larger than the bound")

// errUnsupported reports a request or response of a known protocol that
// the wire code cannot guard (several choices, a tool call of a kind that
// is not a function); the adapter passes such an exchange through.
var errUnsupported = errors.New("httpguard: not guardable")

// readBounded reads r whole if it holds at most limit bytes, else returns
// errTooLarge with the bytes read so far (limit+1 of them) so the caller
// can pass them on followed by the rest of r.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	return readSized(r, -1, limit)
}

// presize is the most readSized sets aside for a body before its bytes
// arrive: a body past it grows as it comes, so a length a peer declares
// and does not send reserves no more than this.
const presize = 64 << 10

// readSized is readBounded for a body that declares its length, size (-1:
// unknown; an http.Request's or http.Response's ContentLength): a body of
// up to presize bytes that holds what it declares is read into one slice
// of its size, where io.ReadAll would start at 512 bytes and grow it four
// to eight times. The slice is the caller's: the guard keeps a body past
// the call (a re-ask's request, GetBody, the client's response), so it is
// not taken from a pool.
func readSized(r io.Reader, size, limit int64) ([]byte, error) {
	c := int64(512)
	if size >= 0 {
		c = min(size, limit, presize) + 1 // +1: room to see the end
	}
	b := make([]byte, 0, c)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		room := b[len(b):min(int64(cap(b)), limit+1)]
		n, err := r.Read(room)
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return b, errTooLarge
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// wireProtocol is one wire protocol's codec over raw bodies. Methods take
// and return whole JSON bodies; none of them changes its arguments. A
// stream is first assembled into the equivalent sync response
// (newAssembler), so the same methods serve both.
//
// Each protocol is one file set; wireProtocols (protocols.go) lists them.
type wireProtocol interface {
	// name is the protocol's name in events and spans.
	name() string
	// recognise reports whether a request of method to path is one the
	// protocol guards (its body still has to parse: parseRequest).
	recognise(method, path string) bool
	// ownsPath reports whether path is one of the protocol's endpoints,
	// with any method and whether guarded or not: an error to a request
	// to it is answered in the protocol's error shape (errorProtocol).
	ownsPath(path string) bool
	// parseRequest reads what a guard needs from a request to path with
	// body; errUnsupported or errJSON when the body is not this protocol's.
	parseRequest(path string, body []byte) (wireRequest, error)
	// calls lists resp's tool calls, in order.
	calls(resp []byte) ([]wireCall, error)
	// accept writes cleaned arguments back: args[i] (a JSON value) for
	// call i, nil to leave it as it is.
	accept(resp []byte, args [][]byte) ([]byte, error)
	// reask builds the next request from the original request body: resp's
	// assistant turn replayed and one tool result per call, in order.
	reask(req, resp []byte, answers []wireAnswer) ([]byte, error)
	// usage reads the model and token counts of resp.
	usage(resp []byte) (wireUsage, error)
	// errorBody is an error body in the protocol's shape.
	errorBody(status int, typ, msg string) []byte
	// text returns resp's answer text (not its reasoning), "" if none;
	// an unguardable error when a key it reads is given twice or only in
	// another case (see keys.go).
	text(resp []byte) (string, error)
	// finish returns resp's stop reasons, as the provider names them.
	finish(resp []byte) []string
	// end returns a response for model without tool calls whose answer is
	// text: a guard's stand-in answer (a limit's, a failure handler's).
	end(model, text string) []byte
	// transcript reads a request body's messages for the limits, oldest
	// first; nil when it has none.
	transcript(req []byte) []guard.Message
	// newAssembler returns an assembler for one upstream stream.
	newAssembler() assembler
	// framing is how the protocol's streams are cut into events and
	// written back.
	framing() framing
	// opening reports whether an upstream stream event only opens the
	// stream: it carries no text, call or end of the answer, so the
	// client's response waits for the next one (see clientStream).
	opening(ev streamEvent) bool
	// newGate returns the gate of one logical call's client stream.
	newGate(w io.Writer) streamGate
}

// jsonKind is the first byte of a JSON value (see kind), for a member of a
// request that parseRequest checks the shape of but does not read (the
// conversation's list): decoding it into a json.RawMessage would copy it
// whole. Unmarshal calls UnmarshalJSON with the value's bytes, null
// included, and for a key given twice the last value's, as it fills a
// json.RawMessage; 0 when absent.
type jsonKind byte

// UnmarshalJSON keeps b's first byte.
func (k *jsonKind) UnmarshalJSON(b []byte) error {
	if len(b) > 0 {
		*k = jsonKind(b[0])
	}
	return nil
}

// wireRequest is what a guard needs from a recognised request.
type wireRequest struct {
	Model  string
	Stream bool
	Tools  []wireTool
	// State is the server-side conversation state the request uses.
	State serverState
}

// wireTool is a function tool a request offers.
type wireTool struct {
	Name string
	// Schema is the JSON Schema of its arguments, raw as the request has
	// it (Gemini's OpenAPI-subset parameters converted); nil when the tool
	// declares none.
	Schema json.RawMessage
	// Err, when not nil, says why the tool's schema could not be read or
	// converted (nested too deep, a Gemini parameters the converter
	// refuses): the tool's calls are refused or passed as for a schema
	// that does not compile, and the request's other tools are guarded.
	Err error
}

// serverState is server-side conversation state a request refers to or
// creates. A re-ask built on such a request is kept by the server too, and
// becomes part of the conversation the client continues.
type serverState struct {
	PreviousResponseID string // Responses previous_response_id
	Conversation       string // Responses conversation (an id, or an object's id)
	// Stored: the response is stored server-side (Responses' store, which
	// defaults to true; Chat Completions' store, which defaults to false).
	Stored bool
	// Thread is an Anthropic message thread's type ("create",
	// "continue"): the server holds the conversation, and
	// PreviousResponseID is the message a continued thread follows.
	Thread string
}

// wireCall is one tool call of a response as the client will read it.
type wireCall struct {
	ID   string // "" where the protocol sent none (Gemini)
	Name string
	Args []byte // raw arguments: a JSON text (OpenAI's decoded string, Anthropic's input, Gemini's args)
}

// wireAnswer is the tool result a re-ask sends for one call.
type wireAnswer struct {
	Content string
	IsError bool
}

// wireUsage is a response's model and token counts.
type wireUsage struct {
	Model                     string
	InputTokens, OutputTokens int64
	Reported                  bool // the response reports usage at all
}

// ErrorResponse returns an error response to r as its provider would
// answer it: status, Content-Type application/json, and a body in the
// error shape of the protocol r's path names, where typ says what kind of
// error it is and msg what went wrong:
//
//   - Anthropic Messages (…/v1/messages): {"type":"error","error":{"type":typ,"message":msg}}
//   - Ollama (…/api/chat): {"error":"typ: msg"}
//   - Gemini (…/models/{model}:{method}): {"error":{"code":status,"message":msg,"status":…,"details":[…]}},
//     status Google's name for the HTTP status (INVALID_ARGUMENT for
//     400, 413 and 422, DEADLINE_EXCEEDED for 408 and 504, UNAVAILABLE
//     for 502 and 503, …) and an ErrorInfo whose reason is typ upper-cased
//   - anything else, OpenAI Chat Completions and Responses included:
//     OpenAI's {"error":{"message":msg,"type":typ,"param":null,"code":typ}},
//     the shape OpenAI-compatible clients read
//
// A status the SDKs retry (408, 409, 429 and 5xx) carries no
// x-should-retry header, so the client's SDK applies its own rules; any
// other carries x-should-retry: false, so the SDK surfaces its API error
// at once. The guard's own refusals are made the same way (with
// x-should-retry: false whatever their status: see the package
// documentation, "Failing closed"). A server that puts a [Transport]
// behind a handler of its own (a reverse proxy) answers its own errors with
// ErrorResponse, so that its clients read them as they read the
// provider's.
func ErrorResponse(r *http.Request, status int, typ, msg string) *http.Response {
	resp := errorResponse(errorProtocol(r.URL.Path), r, status, typ, msg)
	if sdkRetries(status) {
		resp.Header.Del("X-Should-Retry")
	}
	return resp
}

// sdkRetries reports whether openai-go and anthropic-sdk-go retry a
// response of status by default: 408, 409, 429 and 5xx.
func sdkRetries(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// errorResponse is ErrorResponse in p's error shape with x-should-retry:
// false: the response a guard that refuses answers with (422 for refused
// calls), so the SDK surfaces its API error and does not retry it.
func errorResponse(p wireProtocol, req *http.Request, status int, typ, msg string) *http.Response {
	body := p.errorBody(status, typ, msg)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Should-Retry", "false")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        statusLine(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// upstreamError reads what a retry policy needs from an upstream error
// response: its status and the delay it asks for, from retry-after-ms
// (OpenAI, Anthropic) or Retry-After (seconds or an HTTP date, relative to
// now); wait is 0 when it names none.
func upstreamError(resp *http.Response, now time.Time) (status int, wait time.Duration) {
	if ms := resp.Header.Get("retry-after-ms"); ms != "" {
		if f, err := strconv.ParseFloat(ms, 64); err == nil && f > 0 {
			return resp.StatusCode, time.Duration(f * float64(time.Millisecond))
		}
	}
	if ra := strings.TrimSpace(resp.Header.Get("Retry-After")); ra != "" {
		if f, err := strconv.ParseFloat(ra, 64); err == nil {
			if f > 0 {
				wait = time.Duration(f * float64(time.Second))
			}
		} else if t, err := http.ParseTime(ra); err == nil && t.After(now) {
			wait = t.Sub(now)
		}
	}
	return resp.StatusCode, wait
}

// standInID returns a fresh random id for a stand-in answer (ids only
// need to be unique).
func standInID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkArgs returns an error unless every non-nil args[i] is one JSON
// value and len(args) matches the n calls.
func checkArgs(args [][]byte, n int) error {
	if len(args) != n {
		return fmt.Errorf("httpguard: %d arguments for %d calls", len(args), n)
	}
	for i, a := range args {
		if a != nil && !json.Valid(a) {
			return fmt.Errorf("httpguard: cleaned arguments of call %d are not JSON", i)
		}
	}
	return nil
}

// marshal encodes v without HTML escaping, as the providers write JSON.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// parseBody checks that b is one JSON object (validJSON: what json.Valid
// accepts) and returns its span.
func parseBody(b []byte) (span, error) {
	if !validJSON(b) {
		return span{}, errJSON
	}
	return objectRoot(b)
}

// parseDoc is parseBody, with the body's doc: its objects' and arrays'
// spans noted in the same pass.
func parseDoc(b []byte) (doc, span, error) {
	d := doc{b: b}
	if len(b) > math.MaxInt32 {
		// Past what a nest holds: read without an index.
		if !validJSON(b) {
			return doc{}, span{}, errJSON
		}
	} else {
		// Room for every object and array, in one allocation: there
		// are at most as many as their opening bytes.
		d.nests = make([]nest, 0, bytes.Count(b, []byte("{"))+bytes.Count(b, []byte("[")))
		if !checkJSON(b, &d.nests) {
			return doc{}, span{}, errJSON
		}
	}
	sp, err := objectRoot(b)
	return d, sp, err
}

// objectRoot returns the span of the object b, valid JSON, is: its bytes
// but the space around them (a value neither starts nor ends with space).
func objectRoot(b []byte) (span, error) {
	sp := span{skipSpace(b, 0), len(b)}
	for sp.end > sp.start && isSpace(b[sp.end-1]) {
		sp.end--
	}
	if kind(b, sp) != '{' {
		return span{}, fmt.Errorf("%w: want an object", errJSON)
	}
	return sp, nil
}

// openAIErrorBody is OpenAI's error shape, for Chat Completions and
// Responses alike: {"error": {"message", "type", "param", "code"}}.
func openAIErrorBody(typ, msg string) []byte {
	b, _ := marshal(struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    string  `json:"code"`
		} `json:"error"`
	}{Error: struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	}{msg, typ, nil, typ}})
	return b
}

// requestList returns the list member of the request req (its root r)
// that holds the conversation (messages, contents), which a re-ask
// appends to.
func requestList(req []byte, r span, member string) (span, error) {
	v, ok, err := requestField(req, r, member)
	if err != nil || !ok {
		return span{}, fmt.Errorf("%w: request without %s", errJSON, member)
	}
	return v, nil
}

// checkAnswers returns an error unless there is one answer for each of n
// calls.
func checkAnswers(answers []wireAnswer, n int) error {
	if len(answers) != n {
		return fmt.Errorf("httpguard: %d answers for %d calls", len(answers), n)
	}
	return nil
}

// functionSchemas finds the tool schemas of a request whose tools are
// tools[].function.parameters (readableBody): OpenAI Chat Completions' and
// Ollama's.
func functionSchemas(b []byte, r span) ([]span, error) {
	tools, err := schemasAt(b, r, []string{"tools"})
	if err != nil {
		return nil, err
	}
	ts, err := elems(b, tools)
	if err != nil {
		return nil, err
	}
	var out []span
	for _, t := range ts {
		fns, err := matchingMembers(b, t, "function")
		if err != nil {
			return nil, err
		}
		for _, fn := range fns {
			ps, err := matchingMembers(b, fn, "parameters")
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
	}
	return out, nil
}

// setArgs writes cleaned arguments into resp, which holds n calls: args[i]
// (nil leaves call i's as they are), encoded by enc (nil: as they are), as
// the member key of the object at(i). It is what every protocol's accept
// does once it has found the calls.
func setArgs(resp []byte, args [][]byte, n int, key string, at func(i int) span, enc func([]byte) []byte) ([]byte, error) {
	if err := checkArgs(args, n); err != nil {
		return nil, err
	}
	var edits []edit
	for i, a := range args {
		if a == nil {
			continue
		}
		if enc != nil {
			a = enc(a)
		}
		e, err := setMember(resp, at(i), key, a)
		if err != nil {
			return nil, err
		}
		edits = append(edits, e)
	}
	return apply(resp, edits...), nil
}
