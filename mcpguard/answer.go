package mcpguard

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/exactjson"
)

// The answers the transport writes itself, in the form the client accepts.

// toolError returns the JSON-RPC response to the request id holding a tool
// result that is an error whose text is text (SEP-1303: the model reads it
// and can correct itself).
func toolError(id []byte, text string) []byte {
	t, _ := exactjson.Encode(text) // a string always encodes
	var b bytes.Buffer
	b.Grow(len(id) + len(t) + 96)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"result":{"content":[{"type":"text","text":`)
	b.Write(t)
	b.WriteString(`}],"isError":true}}`)
	return b.Bytes()
}

// rpcError returns a JSON-RPC error response (id null when id is nil).
func rpcError(id []byte, code int, msg string) []byte {
	m, _ := exactjson.Encode(msg)
	if id == nil {
		id = []byte("null")
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(m) + `}}`)
}

// respond returns the response the transport gives r itself: msg, a
// JSON-RPC message, as application/json when the client accepts it (or
// says nothing), else as one server-sent event.
func respond(r *http.Request, status int, msg []byte) *http.Response {
	ctype, body := "application/json", msg
	if !accepts(r, "application/json") && accepts(r, "text/event-stream") {
		ctype, body = "text/event-stream", sseEvent(msg)
	}
	h := http.Header{"Content-Type": {ctype}, "Cache-Control": {"no-cache"}}
	if s := r.Header.Get("Mcp-Session-Id"); s != "" {
		h.Set("Mcp-Session-Id", s)
	}
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}
}

// accepts reports whether r's Accept header takes media type mt (a
// missing header takes anything).
func accepts(r *http.Request, mt string) bool {
	vals := r.Header.Values("Accept")
	if len(vals) == 0 {
		return true
	}
	major, _, _ := strings.Cut(mt, "/")
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			t, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || params["q"] == "0" {
				continue
			}
			if t == mt || t == "*/*" || t == major+"/*" {
				return true
			}
		}
	}
	return false
}

// mediaType returns the media type of h's Content-Type, lower-cased.
func mediaType(h http.Header) string {
	t, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return t
}
