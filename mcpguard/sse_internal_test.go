package mcpguard

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// A stream the transport only watches reaches the client byte for byte,
// whatever its line endings, comments, blank lines or unfinished last
// event, and however the upstream splits its reads.
func TestEventFilterPassesBytes(t *testing.T) {
	streams := []string{
		"event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n",
		"data: a\r\ndata: b\r\n\r\n: a comment\n\n\n\nretry: 10\n\n",
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\ndata: unfinished",
		"",
		"\n",
		"data:" + strings.Repeat("x", 40000) + "\n\n",
	}
	for _, s := range streams {
		var seen []string
		f := newEventFilter(io.NopCloser(iotest.OneByteReader(strings.NewReader(s))), func(ev event, err error) ([]byte, bool) {
			if ev.data != nil {
				seen = append(seen, string(ev.data[:min(len(ev.data), 20)]))
			}
			return nil, false
		})
		got, err := io.ReadAll(f)
		if err != nil || string(got) != s {
			t.Errorf("filtered %q = %q, %v; want it unchanged", s, got, err)
		}
		t.Logf("%q: data %q", s[:min(len(s), 30)], seen)
	}
}

// An event whose data the transport replaces keeps its other fields.
func TestReplaceData(t *testing.T) {
	ev := event{raw: []byte("event: message\r\nid: 7\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n")}
	got := string(ev.replaceData([]byte(`{"b":2}`)))
	want := "event: message\r\nid: 7\r\ndata: {\"b\":2}\n\r\n"
	if got != want {
		t.Errorf("replaceData = %q, want %q", got, want)
	}
}

// The cache keeps at most maxLists lists, the oldest forgotten first, and
// a list forgotten and learned again counts once.
func TestToolCacheBounded(t *testing.T) {
	c := newToolCache()
	page := &listPage{}
	if err := json.Unmarshal([]byte(`{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`), page); err != nil {
		t.Fatal(err)
	}
	key := func(i int) listKey { return sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)}) }
	for i := range 3 * maxLists {
		c.learn(key(i), page, true)
		if i%3 == 0 {
			c.forget(key(i))
			c.learn(key(i), page, true)
		}
	}
	if n := len(c.lists); n != maxLists {
		t.Errorf("the cache holds %d lists, want %d", n, maxLists)
	}
	if c.get(key(0)) != nil || c.get(key(3*maxLists-1)) == nil {
		t.Errorf("the oldest list is kept or the newest forgotten")
	}
	if len(c.order) > 2*len(c.lists)+16 {
		t.Errorf("the eviction order holds %d entries for %d lists", len(c.order), len(c.lists))
	}
	if want := maxLists * (len("t") + len(`{"type":"object"}`)); c.size != want {
		t.Errorf("the cache counts %d bytes, want %d", c.size, want)
	}
}
