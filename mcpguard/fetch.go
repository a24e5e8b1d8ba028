package mcpguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/safetext"
)

// maxPages bounds the pages of one tools/list the transport fetches.
const maxPages = 64

// lookup returns what the transport knows of the tool name on k's server:
// from the cache, or from a tools/list it fetches (once for all the calls
// that miss at the same time) when the tool is not there. A tool the
// server does not list is nil, with the names it does list.
func (t *transport) lookup(r *http.Request, k listKey, name string, meta []byte) (*toolSchema, []string, error) {
	if l := t.tools.get(k); l != nil {
		if ts, ok := l.tools[name]; ok {
			return ts, nil, nil
		}
	}
	l, err := t.fetchOnce(r, k, meta)
	if err != nil {
		return nil, nil, err
	}
	if ts, ok := l.tools[name]; ok {
		return ts, nil, nil
	}
	names := make([]string, 0, len(l.tools))
	for n := range l.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return nil, names, nil
}

// fetchOnce fetches k's tools, or waits for the fetch in progress.
func (t *transport) fetchOnce(r *http.Request, k listKey, meta []byte) (*toolList, error) {
	c := t.tools
	c.fmu.Lock()
	if f, ok := c.flights[k]; ok {
		c.fmu.Unlock()
		select {
		case <-f.done:
			return f.list, f.err
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	f := &flight{done: make(chan struct{})}
	c.flights[k] = f
	c.fmu.Unlock()
	f.list, f.err = t.fetchList(r, meta)
	if f.err == nil {
		c.mu.Lock()
		c.store(k, f.list)
		c.mu.Unlock()
	}
	c.fmu.Lock()
	delete(c.flights, k)
	c.fmu.Unlock()
	close(f.done)
	return f.list, f.err
}

// fetchList sends tools/list to r's server, with r's headers (its session,
// its credentials), and reads every page, within maxPages and MaxBody in
// all. meta is the call's _meta, which the 2026-07-28 protocol needs on
// every request (its progress token dropped).
func (t *transport) fetchList(r *http.Request, meta []byte) (*toolList, error) {
	meta, err := withoutProgressToken(meta)
	if err != nil {
		return nil, err
	}
	var l *toolList
	budget := MaxBody
	cursor := ""
	for page := 0; page < maxPages; page++ {
		id := []byte(strconv.Quote("mcpguard-tools-list-" + strconv.FormatUint(t.fetches.Add(1), 10)))
		params := map[string]json.RawMessage{}
		if meta != nil {
			params["_meta"] = meta
		}
		if page > 0 {
			params["cursor"], _ = json.Marshal(cursor)
		}
		p, _ := json.Marshal(params) // raw JSON always marshals
		body := slices.Concat([]byte(`{"jsonrpc":"2.0","id":`), id, []byte(`,"method":"tools/list","params":`), p, []byte("}"))
		result, n, err := t.roundTripList(r, body, id, budget)
		if err != nil {
			return nil, err
		}
		budget -= n
		var lp listPage
		if err := json.Unmarshal(result, &lp); err != nil {
			return nil, fmt.Errorf("reading the tools/list result: %w", err)
		}
		l = l.with(&lp, page == 0, t.tools.now())
		if !lp.more() {
			return l, nil
		}
		cursor = *lp.NextCursor
	}
	return nil, fmt.Errorf("tools/list has more than %d pages", maxPages)
}

// withoutProgressToken returns a _meta object without its progressToken.
func withoutProgressToken(meta []byte) ([]byte, error) {
	if meta == nil || string(meta) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(meta, &m); err != nil {
		return nil, fmt.Errorf("the call's _meta is not an object: %w", err)
	}
	if _, ok := m["progressToken"]; !ok {
		return meta, nil
	}
	delete(m, "progressToken")
	return json.Marshal(m)
}

// roundTripList sends one tools/list request and returns its result and
// the bytes read, at most budget.
func (t *transport) roundTripList(r *http.Request, body, id []byte, budget int) ([]byte, int, error) {
	req := r.Clone(r.Context())
	req.Method = http.MethodPost
	req.Header = listHeader(r.Header)
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("tools/list was answered with HTTP status %d", resp.StatusCode)
	}
	switch mediaType(resp.Header) {
	case "application/json":
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(budget)+1))
		if err != nil {
			return nil, 0, err
		}
		if len(data) > budget {
			return nil, 0, fmt.Errorf("tools/list is larger than %d bytes", MaxBody)
		}
		result, err := resultOf(data, id)
		return result, len(data), err
	case "text/event-stream":
		er := newEventReader(resp.Body, budget)
		read := 0
		for {
			ev, err := er.next()
			read += len(ev.raw)
			if err == errEventTooLarge {
				return nil, 0, fmt.Errorf("tools/list is larger than %d bytes", MaxBody)
			}
			if ev.data != nil {
				if m, derr := decodeMessage(ev.data); derr == nil && m.method == "" && sameID(m.id, id) {
					result, rerr := resultOf(ev.data, id)
					return result, read, rerr
				}
			}
			if err != nil {
				return nil, 0, fmt.Errorf("the tools/list stream ended without its result: %w", err)
			}
			er.max = budget - read
		}
	}
	return nil, 0, fmt.Errorf("tools/list was answered with Content-Type %s", safetext.Quote(resp.Header.Get("Content-Type"), 80))
}

// resultOf returns the result of data, a JSON-RPC response to id, or its
// error.
func resultOf(data, id []byte) ([]byte, error) {
	ms, err := members(data, "id", "result", "error")
	if err != nil {
		return nil, fmt.Errorf("reading the tools/list response: %w", err)
	}
	if !sameID(ms[0].value, id) {
		return nil, errors.New("the tools/list response answers another request")
	}
	if ms[1].value == nil {
		return nil, fmt.Errorf("tools/list failed: %s", safetext.Truncate(string(ms[2].value), 300))
	}
	return ms[1].value, nil
}

// listHeader returns the headers of a tools/list the transport sends for
// a call: the call's (its session, its credentials, its protocol
// version), without those that describe the call's body, accepting both
// forms of answer the transport reads (the spec asks a client for both;
// a server may refuse a POST that lacks one).
func listHeader(h http.Header) http.Header {
	out := h.Clone()
	out.Set("Accept", "application/json, text/event-stream")
	for name := range out {
		if strings.HasPrefix(http.CanonicalHeaderKey(name), "Mcp-Param-") {
			delete(out, name)
		}
	}
	out.Del("Content-Length")
	out.Del("Mcp-Name")
	out.Del("Last-Event-Id")
	if out.Get("Mcp-Method") != "" {
		out.Set("Mcp-Method", "tools/list")
	}
	return out
}

// list forwards a tools/list the client sent and learns the tools of its
// result.
func (t *transport) list(r *http.Request, body []byte, m message) (*http.Response, error) {
	first := true
	if m.params.value != nil {
		if ms, err := members(m.params.value, "cursor"); err == nil && ms[0].value != nil && string(ms[0].value) != "null" {
			first = false
		}
	}
	k := keyOf(r)
	learn := func(data []byte) {
		if result, err := resultOf(data, m.id); err == nil {
			var lp listPage
			if json.Unmarshal(result, &lp) == nil {
				t.tools.learn(k, &lp, first)
			}
		}
	}
	resp, err := t.forward(r, body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	if mediaType(resp.Header) == "application/json" {
		data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
		if err != nil || len(data) > MaxBody {
			// Not learned: a call of its tools fetches the list, and
			// is refused or passed with an event if that fails too.
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(data), resp.Body), resp.Body}
			return resp, nil
		}
		resp.Body.Close()
		learn(data)
		resp.Body = io.NopCloser(bytes.NewReader(data))
		return resp, nil
	}
	return t.watch(r, k, func(ev event, _ error) ([]byte, bool) {
		if ev.data == nil {
			return nil, false
		}
		if m2, err := decodeMessage(ev.data); err == nil && m2.method == "" && sameID(m2.id, m.id) {
			learn(ev.data)
		}
		return nil, false
	})(resp, nil)
}
