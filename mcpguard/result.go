package mcpguard

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolguard/toolguard/errfmt"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/internal/safetext"
	"github.com/toolguard/toolguard/validation"
)

// Results: the structuredContent of a tool that declares an outputSchema
// is checked against it before the client reads it.

// checkResult checks the result of the call id of tool in resp against
// out, the tool's compiled outputSchema.
func (t *transport) checkResult(r *http.Request, k listKey, resp *http.Response, id []byte, tool string, out *validation.Schema) (*http.Response, error) {
	if resp.StatusCode != http.StatusOK {
		return resp, nil // the server refused the request: no result to check
	}
	switch mediaType(resp.Header) {
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
		if err == nil && len(data) > MaxBody {
			err = fmt.Errorf("the result is larger than %d bytes", MaxBody)
		}
		if err != nil {
			if t.cfg.failClosed {
				resp.Body.Close()
			}
			restored := struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(data), resp.Body), resp.Body}
			return t.unreadResult(r, resp, restored, id, tool, err)
		}
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(data))
		replaced, _, err := t.checkMessage(r, data, id, tool, out)
		if err != nil {
			return t.unreadResult(r, resp, resp.Body, id, tool, err)
		}
		if replaced != nil {
			resp.Body = io.NopCloser(bytes.NewReader(replaced))
			resp.ContentLength = int64(len(replaced))
			resp.Header.Del("Content-Length")
			resp.Header.Del("Content-Encoding")
		}
		return resp, nil
	case "text/event-stream":
		done := false // the call's answer went by
		return t.watch(r, k, func(ev event, err error) ([]byte, bool) {
			if done {
				return nil, false
			}
			if err == errEventTooLarge {
				// It may be the answer: the transport cannot tell.
				done = true
				t.emitFailOpen(r.Context(), guard.Event{Kind: guard.EventUnguarded, Tool: tool, CallID: idText(id), Err: err})
				if t.cfg.failClosed {
					return sseEvent(toolError(id, notChecked(tool, err))), true
				}
				return nil, false
			}
			replaced, answer, err := t.checkMessage(r, ev.data, id, tool, out)
			done = answer
			if err != nil {
				t.emitFailOpen(r.Context(), guard.Event{Kind: guard.EventUnguarded, Tool: tool, CallID: idText(id), Err: err})
				if t.cfg.failClosed {
					return ev.replaceData(toolError(id, notChecked(tool, err))), false
				}
				return nil, false
			}
			if replaced != nil {
				return ev.replaceData(replaced), false
			}
			return nil, false
		})(resp, nil)
	}
	return t.unreadResult(r, resp, resp.Body, id, tool,
		fmt.Errorf("the result came with Content-Type %s", safetext.Quote(resp.Header.Get("Content-Type"), 80)))
}

// unreadResult handles a result the transport was to check but could not
// read: replaced by an isError result failing closed, handed on (its body
// body) with an event failing open.
func (t *transport) unreadResult(r *http.Request, resp *http.Response, body io.ReadCloser, id []byte, tool string, reason error) (*http.Response, error) {
	t.emitFailOpen(r.Context(), guard.Event{Kind: guard.EventUnguarded, Tool: tool, CallID: idText(id), Err: reason})
	if t.cfg.failClosed {
		body.Close()
		return t.answer(r, id, notChecked(tool, reason), reason), nil
	}
	resp.Body = body
	return resp, nil
}

// checkMessage checks data, when it is the response to the call id, and
// returns the response to hand on in its place (nil: data itself) and
// whether data was the response. An event that is another message is not
// the transport's concern; a response to id it cannot read is an error.
func (t *transport) checkMessage(r *http.Request, data, id []byte, tool string, out *validation.Schema) (replaced []byte, answer bool, err error) {
	if data == nil {
		return nil, false, nil
	}
	m, err := decodeMessage(data)
	if err != nil {
		if bytes.Contains(data, id) {
			return nil, true, fmt.Errorf("reading the result: %w", err)
		}
		return nil, false, nil
	}
	if m.method != "" || !sameID(m.id, id) {
		return nil, false, nil // another message
	}
	if m.result.value == nil {
		return nil, true, nil // an error response
	}
	verr, err := checkOutput(m.result.value, out)
	if err != nil || verr == nil {
		return nil, true, err
	}
	verr.Tool, verr.CallID = tool, idText(id)
	t.emit(r.Context(), guard.Event{Kind: EventInvalidResult, Tool: tool, CallID: idText(id), Err: verr})
	if t.cfg.output == PassOutput {
		return nil, true, nil
	}
	outcomeOf(r.Context()).set(verr)
	return toolError(id, outputFeedback(verr)), true, nil
}

// checkOutput checks result, a tools/call result, against out: nil when
// it is an error result, not a complete result, or its structuredContent
// is valid.
//
// The 2026-07-28 protocol gives every result a resultType: "complete" for
// a tool's result, "input_required" for a multi round-trip request
// (SEP-2322: the server asks the client for input, and the client calls
// the tool again with it), "task" for the tasks extension's; a result
// without one, from an earlier protocol, is complete. Only a complete
// result holds the tool's output.
func checkOutput(result []byte, out *validation.Schema) (*validation.Error, error) {
	ms, err := membersOf(result, "isError", "structuredContent", "resultType")
	if err != nil {
		return nil, fmt.Errorf("reading the result: %w", err)
	}
	if string(ms[0].value) == "true" {
		return nil, nil
	}
	if rt := ms[2].value; rt != nil {
		if s, ok := unquote(rt); ok && s != "complete" {
			return nil, nil // not the tool's output (yet)
		}
	}
	if ms[1].value == nil {
		return &validation.Error{Violations: []validation.Violation{{Keyword: "structuredContent",
			Message: "the result has no structuredContent, though the tool declares an outputSchema"}}}, nil
	}
	if sc := ms[1].value; sc[0] == '{' && out.AcceptsFast(sc) {
		return nil, nil // valid, read in one pass without decoding
	}
	v, err := exactjson.Decode(ms[1].value)
	if err != nil {
		return nil, fmt.Errorf("reading the structuredContent: %w", err)
	}
	return out.Check(v), nil
}

// maxOutputFeedback bounds the text of a result refused for its
// structuredContent.
const maxOutputFeedback = 4096

// outputFeedback is the text of the isError result that replaces a result
// whose structuredContent does not match the tool's outputSchema: every
// violation, sorted as validation sorts them, bounded.
func outputFeedback(e *validation.Error) string {
	n := len(e.Violations) + e.Omitted
	var b strings.Builder
	fmt.Fprintf(&b, "Invalid result: tool %s returned structuredContent that does not match its outputSchema, so the result was withheld: %d %s.",
		safetext.Quote(e.Tool, 80), n, plural(n, "error", "errors"))
	for i, v := range e.Violations {
		line := "\n- " + safetext.PathLabel(v.Path) + ": " + safetext.Sanitize(v.Message, 300)
		if v.Got != "" {
			line += ", got " + safetext.Sanitize(v.Got, errfmt.DefaultMaxValueBytes)
		}
		if b.Len()+len(line) > maxOutputFeedback-80 {
			fmt.Fprintf(&b, "\n- … %d more", n-i)
			break
		}
		b.WriteString(line)
	}
	b.WriteString("\nThe tool broke its own output contract; do not rely on its output.")
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// notChecked is the text of a result withheld because it could not be
// checked against the tool's outputSchema.
func notChecked(tool string, reason error) string {
	return safetext.Truncate(fmt.Sprintf("%s: the result of tool %s could not be checked against its outputSchema, so it was withheld: %v",
		errfmt.PrefixNotAccepted, safetext.Quote(tool, 80), reason), errfmt.MaxToolErrorBytes)
}
