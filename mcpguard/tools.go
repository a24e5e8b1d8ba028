package mcpguard

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/toolguard/toolguard/validation"
)

// The tools the transport has learned, per server and session, from the
// tools/list results that passed through it or that it fetched itself.

// Bounds of the tool cache: the lists of at most maxLists servers and
// sessions, holding at most maxCacheBytes of schemas together. The oldest
// list is forgotten first; a call of one of its tools fetches it again.
const (
	maxLists      = 1024
	maxCacheBytes = 64 << 20
)

// listKey names one server and session: a hash of the endpoint URL, the
// Mcp-Session-Id and the Authorization header (two users of a stateless
// server may be offered different tools; the header itself is never kept).
type listKey [sha256.Size]byte

func keyOf(r *http.Request) listKey {
	h := sha256.New()
	u := *r.URL
	u.Fragment, u.RawFragment = "", ""
	for _, s := range []string{u.String(), r.Header.Get("Mcp-Session-Id"), r.Header.Get("Authorization")} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var k listKey
	h.Sum(k[:0])
	return k
}

// toolSchema is what the transport knows of one tool.
type toolSchema struct {
	input  json.RawMessage // nil: the tool declared none
	output json.RawMessage // nil: no outputSchema
	// annotations as the server sent them (nil: none); read only for a
	// trusted server (WithTrustedServers).
	annotations json.RawMessage

	once    sync.Once // compiles the schemas on the tool's first call
	in, out *validation.Schema
	err     error
}

// toolList is the tools of one server and session. It is never modified
// once in the cache: a new page makes a new list. A tool it lacks is
// looked for in a fresh tools/list (see transport.lookup), so a list read
// in part, or one the server changed without telling, costs a fetch, never
// a call passed unchecked.
type toolList struct {
	tools map[string]*toolSchema
	size  int    // bytes of names and schemas held
	seq   uint64 // when the cache took it, for eviction
	// expires is when the list stops being fresh, by the ttlMs its pages
	// carried (the earliest); zero when none gave a positive one.
	expires time.Time
}

// listPage is a tools/list result, as far as the transport reads it.
type listPage struct {
	Tools []struct {
		Name         string          `json:"name"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Annotations  json.RawMessage `json:"annotations"`
	} `json:"tools"`
	NextCursor *string `json:"nextCursor"`
	// TTLMs is how long, in milliseconds, the server says the result
	// stays fresh (2026-07-28's cacheable results); nil when absent.
	TTLMs *int64 `json:"ttlMs"`
}

// maxTTL bounds the freshness a ttlMs can give a list, so that no
// duration overflows: past it, the list is kept as one without a ttlMs.
const maxTTL = 365 * 24 * time.Hour

// more reports whether the page says another follows.
func (p *listPage) more() bool { return p.NextCursor != nil && *p.NextCursor != "" }

// with returns a new list: l's tools (none when l is nil) and the page's,
// the page's winning for a name in both, fresh until the earliest expiry
// of l's and the page's ttlMs counted from now.
func (l *toolList) with(p *listPage, first bool, now time.Time) *toolList {
	n := &toolList{tools: make(map[string]*toolSchema, len(p.Tools))}
	if l != nil && !first {
		for name, t := range l.tools {
			n.tools[name] = t
		}
		n.size = l.size
		n.expires = l.expires
	}
	if p.TTLMs != nil && *p.TTLMs > 0 && *p.TTLMs < int64(maxTTL/time.Millisecond) {
		if e := now.Add(time.Duration(*p.TTLMs) * time.Millisecond); n.expires.IsZero() || e.Before(n.expires) {
			n.expires = e
		}
	}
	for _, t := range p.Tools {
		if t.Name == "" {
			continue
		}
		if old, ok := n.tools[t.Name]; ok {
			n.size -= len(t.Name) + len(old.input) + len(old.output) + len(old.annotations)
		}
		ts := &toolSchema{input: nullAsNone(t.InputSchema), output: nullAsNone(t.OutputSchema), annotations: nullAsNone(t.Annotations)}
		n.tools[t.Name] = ts
		n.size += len(t.Name) + len(ts.input) + len(ts.output) + len(ts.annotations)
	}
	return n
}

// nullAsNone returns nil for a schema sent as null, else raw.
func nullAsNone(raw json.RawMessage) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return raw
}

// toolCache holds the lists, bounded in entries and bytes. Lookups take a
// read lock; only learning and forgetting write.
type toolCache struct {
	mu    sync.RWMutex
	lists map[listKey]*toolList
	order []aged // oldest first; may hold lists since replaced or forgotten
	size  int
	seq   uint64

	fmu     sync.Mutex
	flights map[listKey]*flight

	now func() time.Time // the clock of ttlMs; time.Now
}

// aged is a key as the cache took it: the list is still the one taken when
// its seq matches.
type aged struct {
	key listKey
	seq uint64
}

// flight is one tools/list fetch in progress; callers for the same key wait
// for it instead of fetching again.
type flight struct {
	done chan struct{}
	list *toolList
	err  error
}

func newToolCache() *toolCache {
	return &toolCache{lists: make(map[listKey]*toolList), flights: make(map[listKey]*flight), now: time.Now}
}

// get returns k's list while it is fresh: nil when there is none, or when
// the ttlMs its server gave has run out (the next call fetches it again).
func (c *toolCache) get(k listKey) *toolList {
	c.mu.RLock()
	l := c.lists[k]
	c.mu.RUnlock()
	if l != nil && !l.expires.IsZero() && !c.now().Before(l.expires) {
		return nil
	}
	return l
}

// learn records a tools/list page for k; first says whether it is the
// first page (the request named no cursor).
func (c *toolCache) learn(k listKey, p *listPage, first bool) *toolList {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.store(k, c.lists[k].with(p, first, c.now()))
}

// store puts n in the cache as k's list and evicts the oldest lists past
// the bounds. c.mu must be held.
func (c *toolCache) store(k listKey, n *toolList) *toolList {
	old := c.lists[k]
	if old != nil {
		c.size -= old.size
	}
	c.seq++
	n.seq = c.seq
	c.lists[k] = n
	c.order = append(c.order, aged{k, n.seq})
	c.size += n.size
	for (len(c.lists) > maxLists || c.size > maxCacheBytes) && len(c.order) > 0 {
		oldest := c.order[0]
		c.order = c.order[1:]
		if l, ok := c.lists[oldest.key]; ok && l.seq == oldest.seq && l != n {
			c.size -= l.size
			delete(c.lists, oldest.key)
		}
	}
	if len(c.order) > 2*len(c.lists)+16 {
		c.compact()
	}
	return n
}

// compact drops from c.order the entries of lists since replaced or
// forgotten, so that it stays within twice the lists held.
func (c *toolCache) compact() {
	keep := c.order[:0]
	for _, a := range c.order {
		if l, ok := c.lists[a.key]; ok && l.seq == a.seq {
			keep = append(keep, a)
		}
	}
	clear(c.order[len(keep):])
	c.order = keep
}

// forget drops k's list (notifications/tools/list_changed, a session's
// end): the next call of one of its tools fetches it again.
func (c *toolCache) forget(k listKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.lists[k]; ok {
		c.size -= l.size
		delete(c.lists, k)
	}
	if len(c.order) > 2*len(c.lists)+16 {
		c.compact()
	}
}
