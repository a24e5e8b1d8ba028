package validation

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
)

// DefaultCacheSize is the number of schemas a [Cache] keeps when [NewCache] is
// not told otherwise.
const DefaultCacheSize = 4096

// Cache compiles schemas on first use and keeps them, so that a tool's schema
// is compiled once however often, and however concurrently, it is seen. It is
// safe for concurrent use; the zero value is not usable, call [NewCache].
//
// [Schema] values passed to Get are treated as immutable: Get recognizes a
// schema it has seen by its identity (the map, slice, string or pointer
// itself) and only fingerprints the content (one marshal and one SHA-256) the
// first time it sees an identity. Modifying a map after passing it is not
// noticed; pass a new map instead. A schema given as JSON text (a string,
// []byte or json.RawMessage) in a fresh value each time, as a proxy reads
// it from every request, is recognized by its text: the same bytes as a
// text seen before, compared whole, find that text's compiled schema
// without being compacted or fingerprinted again.
//
// A Cache is bounded: it keeps about size identities, size texts and size
// compiled schemas ([DefaultCacheSize] by default; concurrent inserts may
// overshoot by the number of goroutines inserting at once); when an insert
// finds it full it forgets about an eighth of its entries, which are
// compiled again if they come back. A schema whose value is rebuilt for every call (as
// langchaingo's OpenAIFunctionsAgent does with its function maps) is
// remembered under at most 8 identities and found by its fingerprint after
// that, so such values are neither kept alive nor allowed to crowd out the
// others. Memory stays flat however many distinct schema values a
// long-running process passes through it.
type Cache struct {
	opts    []Option
	byID    boundedMap // identity -> *cacheEntry
	byText  boundedMap // maphash of a JSON text -> *textEntry
	byHash  boundedMap // [32]byte -> *cacheEntry
	seed    maphash.Seed
	maxSize int
}

// textEntry is a schema seen as JSON text: the text, which a lookup
// compares whole (its key is a 64-bit hash, which two texts may share),
// and the entry of its content.
type textEntry struct {
	text  []byte
	entry *cacheEntry
}

type cacheEntry struct {
	once   sync.Once
	raw    []byte
	schema *Schema
	err    error
	ids    atomic.Int32 // identities recorded for this content
}

// maxIdentities bounds the identities recorded for one schema content.
const maxIdentities = 8

// NewCache returns an empty [Cache] whose schemas are compiled with opts.
func NewCache(opts ...Option) *Cache {
	return NewCacheSize(DefaultCacheSize, opts...)
}

// NewCacheSize is [NewCache] with room for size schemas (at least 8).
func NewCacheSize(size int, opts ...Option) *Cache {
	size = max(size, 8)
	return &Cache{opts: opts, byID: boundedMap{max: size}, byText: boundedMap{max: size}, byHash: boundedMap{max: size},
		seed: maphash.MakeSeed(), maxSize: size}
}

// Get returns the compiled schema for schema, compiling it on first use. It
// accepts everything [Compile] does; a *[Schema] is returned as is. A schema that
// does not compile yields the same error each time without being compiled
// again.
func (c *Cache) Get(schema any) (*Schema, error) {
	if s, ok := schema.(*Schema); ok && s != nil {
		return s, nil
	}
	id, hasID := identity(schema)
	if hasID {
		if e, ok := c.byID.Load(id); ok {
			return e.(*cacheEntry).get(c.opts)
		}
	}
	text, isText := jsonText(schema)
	var textKey uint64
	if isText {
		textKey = maphash.Bytes(c.seed, text)
		if e, ok := c.byText.Load(textKey); ok {
			if te := e.(*textEntry); bytes.Equal(te.text, text) {
				c.remember(id, hasID, te.entry)
				return te.entry.get(c.opts)
			}
		}
	}
	raw, err := schemaBytes(schema)
	if err != nil {
		return nil, err
	}
	// Load first: the entry is nearly always there (a request brings its
	// tools' schemas as fresh bytes each time, with the same hash), and
	// LoadOrStore would make an entry only to drop it.
	sum := sha256.Sum256(raw)
	e, ok := c.byHash.Load(sum)
	if !ok {
		e, _ = c.byHash.LoadOrStore(sum, &cacheEntry{raw: raw})
	}
	entry := e.(*cacheEntry)
	if isText {
		// The text is the caller's: kept as a copy, unless it was compact
		// already and the entry's own bytes are the same.
		kept := entry.raw
		if !bytes.Equal(kept, text) {
			kept = bytes.Clone(text)
		}
		c.byText.LoadOrStore(textKey, &textEntry{text: kept, entry: entry})
	}
	c.remember(id, hasID, entry)
	return entry.get(c.opts)
}

// remember records id, when the schema has one, as an identity of entry,
// as long as fewer than maxIdentities were recorded for it. The count is
// read before it is added to, so that a schema whose identities are all
// recorded costs a lookup no write to memory another core shares, and the
// count stays bounded.
func (c *Cache) remember(id idKey, hasID bool, entry *cacheEntry) {
	if hasID && entry.ids.Load() < maxIdentities && entry.ids.Add(1) <= maxIdentities {
		c.byID.LoadOrStore(id, entry)
	}
}

// jsonText returns schema's bytes when it is JSON text: a string, []byte
// or json.RawMessage, the forms [schemaBytes] takes as they are. A string
// is viewed in place, never copied: the bytes are only hashed and
// compared.
func jsonText(schema any) ([]byte, bool) {
	switch s := schema.(type) {
	case json.RawMessage:
		return s, true
	case []byte:
		return s, true
	case string:
		return unsafe.Slice(unsafe.StringData(s), len(s)), true
	}
	return nil, false
}

func (e *cacheEntry) get(opts []Option) (*Schema, error) {
	e.once.Do(func() {
		cfg := compileConfig{draft: Draft7}
		for _, o := range opts {
			o(&cfg)
		}
		if cfg.err != nil {
			e.err = cfg.err
			return
		}
		e.schema, e.err = compileBytes(e.raw, &cfg)
	})
	return e.schema, e.err
}

// idKey identifies a schema value by what it points at. Keeping the pointer
// (not a uintptr) keeps the value alive while it is cached, so its address
// cannot be reused by another value.
type idKey struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
	n    int
}

// identity returns a key for schema that stays the same for as long as the
// caller keeps passing the same value: the same map, slice, string or
// pointer, or the same interface holding a struct (such as a
// jsonschema.Definition kept in an llms.Tool).
func identity(schema any) (idKey, bool) {
	if schema == nil {
		return idKey{}, false
	}
	eface := (*[2]unsafe.Pointer)(unsafe.Pointer(&schema))
	switch s := schema.(type) {
	case string:
		return idKey{typ: eface[0], data: unsafe.Pointer(unsafe.StringData(s)), n: len(s)}, len(s) > 0
	case []byte:
		return idKey{typ: eface[0], data: unsafe.Pointer(unsafe.SliceData(s)), n: len(s)}, len(s) > 0
	}
	v := reflect.ValueOf(schema)
	switch v.Kind() {
	case reflect.Map, reflect.Pointer:
		return idKey{typ: eface[0], data: v.UnsafePointer()}, !v.IsNil()
	case reflect.Slice:
		return idKey{typ: eface[0], data: v.UnsafePointer(), n: v.Len()}, v.Len() > 0
	case reflect.Struct, reflect.Array:
		// A struct held in an interface is boxed: the interface's data word
		// points at a copy that lives as long as the interface value and
		// moves with it when the llms.Tool holding it is copied.
		return idKey{typ: eface[0], data: eface[1]}, v.Type().Size() > 0
	}
	return idKey{}, false
}

// boundedMap is a sync.Map that forgets about an eighth of its entries when
// an insert finds it full. Reads stay lock-free.
type boundedMap struct {
	m   sync.Map
	n   atomic.Int64
	max int
}

func (b *boundedMap) Load(k any) (any, bool) { return b.m.Load(k) }

func (b *boundedMap) LoadOrStore(k, v any) (any, bool) {
	if got, ok := b.m.Load(k); ok {
		return got, true
	}
	if b.n.Load() >= int64(b.max) {
		b.evict()
	}
	got, loaded := b.m.LoadOrStore(k, v)
	if !loaded {
		b.n.Add(1)
	}
	return got, loaded
}

func (b *boundedMap) evict() {
	drop := max(b.max/8, 1)
	b.m.Range(func(k, _ any) bool {
		if _, deleted := b.m.LoadAndDelete(k); deleted {
			b.n.Add(-1)
			drop--
		}
		return drop > 0
	})
}

// Len returns the number of entries (for tests and monitoring).
func (b *boundedMap) Len() int { return int(b.n.Load()) }

// Len returns how many compiled schemas the cache holds.
func (c *Cache) Len() int { return c.byHash.Len() }
