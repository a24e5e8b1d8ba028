package fakeprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"
)

// reply is a [Reply] step rendered for one request: ids assigned, usage
// counted. Its protocol's writer turns it into a body or a stream.
type reply struct {
	proto   Protocol
	model   string
	id      string // response id
	parts   []Part // call ids assigned (not for Gemini calls without one)
	itemIDs []string
	in, out int
	body    []byte // the request body
	query   string // the request's raw query
}

// render assigns a reply's ids and usage. Callers hold s.mu.
func (s *Server) render(proto Protocol, model string, st Step, body []byte) *reply {
	r := &reply{proto: proto, model: model, parts: append([]Part(nil), st.reply...), body: body}
	switch proto {
	case Chat:
		r.id = s.id("chatcmpl-")
	case Responses:
		r.id = s.id("resp_")
	case Messages:
		r.id = s.id("msg_")
	case Gemini:
		r.id = s.id("resp-")
	}
	out := 0
	for i, p := range r.parts {
		out += len(p.text) + len(p.args)
		if p.kind != callPart || p.id != "" {
			continue
		}
		switch proto {
		case Chat, Responses:
			r.parts[i].id = s.id("call_")
		case Messages:
			r.parts[i].id = s.id("toolu_")
		}
	}
	if proto == Responses {
		for _, it := range responseItems(r.parts) {
			switch it.kind {
			case thinkingPart:
				r.itemIDs = append(r.itemIDs, s.id("rs_"))
			case textPart:
				r.itemIDs = append(r.itemIDs, s.id("msg_"))
			case callPart:
				r.itemIDs = append(r.itemIDs, s.id("fc_"))
			}
		}
	}
	r.in, r.out = 1+len(body)/4, 1+out/4
	if st.usage != nil {
		r.in, r.out = st.usage[0], st.usage[1]
	}
	return r
}

// hasCalls reports whether the reply holds a tool call.
func (r *reply) hasCalls() bool {
	for _, p := range r.parts {
		if p.kind == callPart {
			return true
		}
	}
	return false
}

// write answers the request with r.
func (r *reply) write(w http.ResponseWriter, stream bool) {
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		var b []byte
		switch r.proto {
		case Chat:
			b = r.chatJSON()
		case Responses:
			b = marshal(r.response("completed", r.responseOutput()))
		case Messages:
			b = r.messageJSON()
		case Gemini:
			b = r.geminiJSON()
		}
		w.Write(b)
		return
	}
	if r.proto == Gemini && !sseQuery(r.query) {
		r.geminiArrayStream(w)
		return
	}
	sw := newSSE(w, r.proto == Gemini)
	switch r.proto {
	case Chat:
		r.chatStream(sw)
	case Responses:
		r.responsesStream(sw)
	case Messages:
		r.messagesStream(sw)
	case Gemini:
		r.geminiStream(sw)
	}
}

// sse writes server-sent events and flushes each one.
type sse struct {
	w    http.ResponseWriter
	f    http.Flusher
	crlf bool // Gemini ends its lines with \r\n
}

func newSSE(w http.ResponseWriter, crlf bool) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f, crlf: crlf}
}

// event writes one event: an event line when name is set, then data.
func (s *sse) event(name string, data []byte) {
	nl := "\n"
	if s.crlf {
		nl = "\r\n"
	}
	var b bytes.Buffer
	if name != "" {
		fmt.Fprintf(&b, "event: %s%s", name, nl)
	}
	fmt.Fprintf(&b, "data: %s%s%s", data, nl, nl)
	s.w.Write(b.Bytes())
	if s.f != nil {
		s.f.Flush()
	}
}

// marshal encodes v without HTML escaping, as the providers do.
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("fakeprovider: " + err.Error()) // only our own types are encoded
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// jsonUnmarshal is json.Unmarshal, for request bodies that may be anything.
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// argsObject is a call's arguments where the protocol carries a JSON value:
// the text itself when it is valid JSON, else the text as a JSON string.
func argsObject(args string) json.RawMessage {
	if json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	return marshal(args)
}

// fragments splits s into up to three non-empty pieces at rune boundaries,
// the way streams deliver text and arguments.
func fragments(s string) []string {
	if s == "" {
		return nil
	}
	n := utf8.RuneCountInString(s)
	size := (n + 2) / 3
	var out []string
	for len(s) > 0 {
		i, k := 0, 0
		for i < len(s) && k < size {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
			k++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// writeError answers status with msg in proto's error shape.
func writeError(w http.ResponseWriter, proto Protocol, status int, msg string, header []string) {
	setHeader(w, header)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(errorBody(proto, status, msg))
}

// errorBody is msg in proto's error shape for status.
func errorBody(proto Protocol, status int, msg string) []byte {
	switch proto {
	case Messages:
		typ := "api_error"
		switch {
		case status == http.StatusBadRequest:
			typ = "invalid_request_error"
		case status == http.StatusUnauthorized:
			typ = "authentication_error"
		case status == http.StatusForbidden:
			typ = "permission_error"
		case status == http.StatusNotFound:
			typ = "not_found_error"
		case status == http.StatusRequestEntityTooLarge:
			typ = "request_too_large"
		case status == http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case status == 529:
			typ = "overloaded_error"
		}
		return marshal(struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}{Type: "error", Error: struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}{typ, msg}})
	case Gemini:
		st := "UNKNOWN"
		switch status {
		case http.StatusBadRequest:
			st = "INVALID_ARGUMENT"
		case http.StatusUnauthorized:
			st = "UNAUTHENTICATED"
		case http.StatusForbidden:
			st = "PERMISSION_DENIED"
		case http.StatusNotFound:
			st = "NOT_FOUND"
		case http.StatusTooManyRequests:
			st = "RESOURCE_EXHAUSTED"
		case http.StatusInternalServerError:
			st = "INTERNAL"
		case http.StatusServiceUnavailable, 529:
			st = "UNAVAILABLE"
		case http.StatusGatewayTimeout:
			st = "DEADLINE_EXCEEDED"
		}
		type gerr struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		}
		return marshal(struct {
			Error gerr `json:"error"`
		}{gerr{status, msg, st}})
	}
	// OpenAI, and requests of no protocol.
	typ, code := "server_error", any(nil)
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status < 500:
		typ = "invalid_request_error"
	}
	type oerr struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   any    `json:"param"`
		Code    any    `json:"code"`
	}
	return marshal(struct {
		Error oerr `json:"error"`
	}{oerr{msg, typ, nil, code}})
}
