// Package fakeprovider is a scripted LLM provider on a loopback HTTP server,
// in the spirit of net/http/httptest and middleware/fakemodel: write the
// model's turns as a literal, point any client's base URL at [Server.URL],
// run it offline, then inspect what the provider was sent.
//
//	srv := fakeprovider.New(
//		fakeprovider.Reply(fakeprovider.Text("Let me check."), fakeprovider.Call("get_weather", `{"city": 42}`)),
//		fakeprovider.Reply(fakeprovider.Call("get_weather", `{"city": "Paris"}`)),
//		fakeprovider.Reply(fakeprovider.Text("It is sunny in Paris.")),
//	)
//	defer srv.Close()
//
// One server speaks four wire protocols, chosen per request by its method
// and path, each as the real API does, sync and streaming (server-sent
// events):
//
//   - OpenAI Chat Completions: POST …/chat/completions (streams when the
//     body has "stream": true; a usage chunk when
//     "stream_options": {"include_usage": true}).
//   - OpenAI Responses: POST …/responses ("stream": true: typed events).
//   - Anthropic Messages: POST …/v1/messages ("stream": true: message_start,
//     content_block_*, message_delta, message_stop and ping events).
//   - Gemini: POST …/models/{model}:generateContent and
//     …:streamGenerateContent?alt=sse (without alt=sse, as the REST
//     client of github.com/google/generative-ai-go asks, the stream is a
//     JSON array whose elements arrive one by one, as Gemini sends it).
//
// Each request consumes the next [Step], whatever its protocol. A [Reply]
// is rendered in the protocol's own shape: text, thinking (Anthropic
// thinking blocks with signatures, Responses reasoning items, Gemini thought
// parts; OpenAI Chat has no reasoning on the wire and leaves it out) and
// tool calls whose arguments are sent as written, invalid JSON included.
// Streams split text and tool-call arguments into several fragments, as real
// servers do. Ids are deterministic per server: response ids chatcmpl-1,
// resp_1, msg_1 (Gemini responseId resp-1), tool-call ids call_1 (Responses
// items fc_1, msg_1, rs_1), toolu_1 for Anthropic; Gemini calls carry no id
// unless given one with [Part.WithID], as Gemini sends none. The usage
// reported is deterministic too (see [Step.WithUsage]).
//
// Running past the script, or a path no protocol owns, answers HTTP 500 in
// the protocol's error shape with "x-should-retry: false", so SDKs that
// retry 5xx do not consume more of the script.
package fakeprovider

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// Created is the Unix time every response reports as its creation time,
// so that recorded exchanges are reproducible.
const Created = 1767225600 // 2026-01-01T00:00:00Z

// maxRequestBody bounds what the server reads of one request body.
const maxRequestBody = 8 << 20

// Protocol names a wire protocol the server speaks.
type Protocol string

// The protocols a [Server] speaks.
const (
	Chat      Protocol = "openai-chat"      // OpenAI Chat Completions
	Responses Protocol = "openai-responses" // OpenAI Responses
	Messages  Protocol = "anthropic"        // Anthropic Messages
	Gemini    Protocol = "gemini"           // Gemini generateContent
)

// Request is one request the server received, recorded before it was
// answered.
type Request struct {
	Method   string
	Path     string // URL path, e.g. /v1/chat/completions
	RawQuery string // URL query without '?', e.g. alt=sse
	Header   http.Header
	Body     []byte   // raw body, as sent
	Protocol Protocol // "" when the path belongs to no protocol
	Stream   bool     // the request asked for a stream
}

// Server is a scripted provider on a loopback httptest.Server. It is safe
// for concurrent use: concurrent requests take the steps in the order they
// acquire the server's lock.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:port, without a
	// trailing slash. Clients append their own paths (/v1/chat/completions,
	// /v1/messages, /v1beta/models/…).
	URL string

	ts       *httptest.Server
	mu       sync.Mutex
	steps    []Step
	next     int
	ids      map[string]int
	requests []Request
}

// New starts a [Server] that answers its requests with steps, in order.
// Call Close when done.
func New(steps ...Step) *Server {
	s := &Server{steps: append([]Step(nil), steps...), ids: map[string]int{}}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.ts.URL
	return s
}

// Close shuts the server down and blocks until all its requests are done.
func (s *Server) Close() { s.ts.Close() }

// Client returns an *http.Client for the server (httptest's).
func (s *Server) Client() *http.Client { return s.ts.Client() }

// Append adds steps to the end of the script.
func (s *Server) Append(steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, steps...)
}

// Remaining returns the number of steps not yet consumed.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steps) - s.next
}

// Requests returns a copy of every request received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		r.Header = r.Header.Clone()
		r.Body = append([]byte(nil), r.Body...)
		out[i] = r
	}
	return out
}

// id returns the server's next id with prefix, e.g. call_1, call_2.
// Callers hold s.mu.
func (s *Server) id(prefix string) string {
	s.ids[prefix]++
	return prefix + strconv.Itoa(s.ids[prefix])
}

// Step is one scripted answer. Build steps with [Reply], [Error], [Raw] and
// [Handle].
type Step struct {
	reply   []Part
	usage   *[2]int
	status  int
	header  []string
	raw     *string
	handler http.HandlerFunc
}

// Reply answers with a model turn made of parts, in order: [Text],
// [Thinking] and [Call]. The stop reason is the protocol's tool-call reason
// (tool_calls, tool_use; Gemini STOP) when parts hold a call, its plain end
// otherwise (stop, end_turn, STOP).
func Reply(parts ...Part) Step { return Step{reply: append([]Part(nil), parts...)} }

// WithUsage sets the input and output token counts a [Reply] reports.
// Without it a reply reports 1+len(request body)/4 input tokens and
// 1+len(its text, thinking and arguments)/4 output tokens.
func (st Step) WithUsage(input, output int) Step {
	st.usage = &[2]int{input, output}
	return st
}

// Error answers with HTTP status and a body in the protocol's own error
// shape (OpenAI's {"error": {...}}, Anthropic's {"type": "error", ...},
// Gemini's {"error": {"code", "status", ...}}), with a type fitting the
// status: 429 rate limit, 529 overloaded, 5xx server error. header is
// key, value pairs, e.g. "Retry-After", "2".
func Error(status int, header ...string) Step {
	mustPairs(header)
	return Step{status: status, header: header}
}

// Raw answers with status and exactly body (Content-Type application/json
// unless header sets it). header is key, value pairs.
func Raw(status int, body string, header ...string) Step {
	mustPairs(header)
	return Step{status: status, raw: &body, header: header}
}

// Handle answers with h, for anything the other steps do not script (a
// stream cut mid-way, a slow answer). The request body h reads is the one
// recorded.
func Handle(h http.HandlerFunc) Step { return Step{handler: h} }

func mustPairs(kv []string) {
	if len(kv)%2 != 0 {
		panic("fakeprovider: header needs key, value pairs")
	}
}

// Part is one piece of a [Reply]: text, thinking or a tool call.
type Part struct {
	kind      partKind
	text      string // text, thinking text
	name      string // call name
	args      string // call arguments, raw
	id        string // call id, "" for the server's next one
	signature string // thinking signature; a Gemini call's thought signature
}

type partKind int

const (
	textPart partKind = iota
	thinkingPart
	callPart
)

// Text is a piece of the model's answer text.
func Text(s string) Part { return Part{kind: textPart, text: s} }

// Thinking is a piece of the model's reasoning with its signature: an
// Anthropic thinking block (thinking, signature), a Responses reasoning item
// (a summary_text and encrypted_content), a Gemini thought part (thought:
// true, thoughtSignature). OpenAI Chat leaves it out.
func Thinking(text, signature string) Part {
	return Part{kind: thinkingPart, text: text, signature: signature}
}

// Call is a tool call of the function name with args, the raw argument
// text, sent as written: it may be invalid JSON. Where the protocol carries
// arguments as a JSON object (Anthropic input, Gemini args), args that are
// not valid JSON are sent as a JSON string in a sync answer, and as written
// in a stream's fragments.
func Call(name, args string) Part { return Part{kind: callPart, name: name, args: args} }

// WithID gives a call an explicit id instead of the server's next one (for
// Gemini, which sends calls without ids, the call then carries this id).
func (p Part) WithID(id string) Part {
	p.id = id
	return p
}

// WithSignature gives a Gemini call a thoughtSignature (other protocols
// ignore it).
func (p Part) WithSignature(sig string) Part {
	p.signature = sig
	return p
}

// serve records the request and answers it with the next step.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err == nil && len(body) > maxRequestBody {
		err = fmt.Errorf("body over %d bytes", maxRequestBody)
	}
	proto, model, stream := route(r, body)
	rec := Request{
		Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, Protocol: proto, Stream: stream,
	}

	s.mu.Lock()
	s.requests = append(s.requests, rec)
	if err != nil {
		s.mu.Unlock()
		writeError(w, proto, http.StatusRequestEntityTooLarge, "fakeprovider: "+err.Error(), nil)
		return
	}
	if proto == "" {
		s.mu.Unlock()
		writeError(w, proto, http.StatusNotFound, fmt.Sprintf("fakeprovider: no protocol at %s %s", r.Method, r.URL.Path), []string{"x-should-retry", "false"})
		return
	}
	if s.next >= len(s.steps) {
		s.mu.Unlock()
		writeError(w, proto, http.StatusInternalServerError, "fakeprovider: script exhausted: the provider was called more times than it has steps", []string{"x-should-retry", "false"})
		return
	}
	st := s.steps[s.next]
	s.next++
	var rep *reply
	if st.handler == nil && st.raw == nil && st.status == 0 {
		rep = s.render(proto, model, st, body)
		rep.query = r.URL.RawQuery
	}
	reqID := "req_" + strconv.Itoa(len(s.requests))
	s.mu.Unlock()

	w.Header().Set("x-request-id", reqID)
	switch {
	case st.handler != nil:
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		st.handler(w, r)
	case st.raw != nil:
		setHeader(w, st.header)
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(st.status)
		io.WriteString(w, *st.raw)
	case st.status != 0:
		writeError(w, proto, st.status, statusMessage(st.status), st.header)
	default:
		rep.write(w, stream)
	}
}

func setHeader(w http.ResponseWriter, kv []string) {
	for i := 0; i+1 < len(kv); i += 2 {
		w.Header().Set(kv[i], kv[i+1])
	}
}

// route names the protocol of r, the model it asks for and whether it
// streams.
func route(r *http.Request, body []byte) (Protocol, string, bool) {
	if r.Method != http.MethodPost {
		return "", "", false
	}
	p := r.URL.Path
	var b struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		_ = jsonUnmarshal(body, &b)
		return Chat, b.Model, b.Stream
	case strings.HasSuffix(p, "/responses"):
		_ = jsonUnmarshal(body, &b)
		return Responses, b.Model, b.Stream
	case strings.HasSuffix(p, "/v1/messages"):
		_ = jsonUnmarshal(body, &b)
		return Messages, b.Model, b.Stream
	}
	i := strings.LastIndex(p, "/models/")
	if i < 0 {
		return "", "", false
	}
	model, method, ok := strings.Cut(p[i+len("/models/"):], ":")
	if !ok || strings.Contains(model, "/") {
		return "", "", false
	}
	switch method {
	case "generateContent":
		return Gemini, model, false
	case "streamGenerateContent":
		return Gemini, model, true
	}
	return "", "", false
}

// statusMessage is the message of an [Error] step's body.
func statusMessage(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "fakeprovider: rate limit reached, retry later"
	case 529:
		return "fakeprovider: overloaded"
	case http.StatusServiceUnavailable:
		return "fakeprovider: service unavailable"
	}
	return "fakeprovider: " + strings.ToLower(http.StatusText(status))
}
