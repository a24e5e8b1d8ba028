package httpguard

import (
	"fmt"
	"unicode/utf8"
)

// Gemini's stream decoder: a chunk is read in one pass that checks it is
// JSON as validJSON does (every byte, the nesting bound), descends into
// what the gate reads (candidates, a candidate's content, its parts) and
// checks the rest as it steps over it. Each object on that path is
// scanned once for all the keys read of it, by lookup's rule kept per key
// (keyFind), and the errors are told in the order the field-by-field
// reading after validJSON told them, a chunk that is not JSON first (the
// oracle in gemini_decode_test.go, held to this one by
// TestGeminiChunkParsedAsBefore and FuzzGeminiChunk). The pass notes too
// whether the chunk has space outside its strings, which a gate drops
// before it hands a chunk on. What the pass reads is kept in one geminiScan that
// parse holds, not in the frames of the functions that descend: a chunk
// is read where a request's goroutine is already deep, and its stack is
// grown by copying it.

// keyFind is what lookup finds of one key in an object, kept over a
// single pass of its members so that the pass serves several keys: the
// value of the member spelled exactly, and whether a second member, or a
// member matching only without regard to case, was seen.
type keyFind struct {
	v               span
	ok, folded, dup bool
}

// next reports whether a member matching as m would be the value found:
// the key spelled exactly, with no member matched before it.
func (f *keyFind) next(m keyMatch) bool { return m == keyExact && !f.ok && !f.folded }

// see takes a member whose key matches as m, with its value v.
func (f *keyFind) see(m keyMatch, v span) {
	switch {
	case m == keyOther:
	case f.ok || f.folded:
		f.dup = true
	case m == keyFolded:
		f.folded = true
	default:
		f.v, f.ok = v, true
	}
}

// result is what lookup returns for key after the members seen.
func (f *keyFind) result(key string) (span, bool, error) {
	switch {
	case f.dup:
		return span{}, false, duplicateKey(key)
	case f.folded:
		return span{}, false, keyCase(key)
	}
	return f.v, f.ok, nil
}

// geminiMembers iterates over the members of an object, for geminiScan,
// which checks them as it reads them (nextMember, endMember) and notes the
// space it meets, so that it is not chat_decode.go's members: k is the
// member's key with its quotes (plain: ASCII without an escape), at its
// value's first byte, and end the object's end after the last member.
type geminiMembers struct {
	i     int // the next member's key; -1 after the last
	k     span
	plain bool
	at    int
	end   int
}

// geminiScan is one pass over a chunk: what it read of the top level, of
// the candidate it reads (cand) and of that candidate's part it reads.
type geminiScan struct {
	b []byte
	c *geminiChunk
	p *geminiParser
	// spaced: the pass met space outside a string.
	spaced bool
	// keyErr is the first error matching a key (matchKey's decodeKey, which
	// a key of a document validJSON accepted never meets).
	keyErr                  error
	errKey, idKey, candsKey keyFind
	n                       int // the candidates read
	cand                    geminiCand
	fcKey, textKey, thought keyFind
	// candsErr is the first error reading the candidates in order (an
	// index, or another candidate's calls); candErr the first reading
	// the first candidate (candidate). Both wait for the top level's.
	candsErr, candErr error
}

// geminiCand is what the pass read of one candidate: its keys, its
// content's, and of its parts (in geminiParser.parts) what candidate and
// candidateCalls read.
type geminiCand struct {
	obj                    bool
	index, finish, content keyFind
	role, parts            keyFind
	// partsErr is the first error of the parts as candidate reads them
	// (a key of an object part), otherErr as candidateCalls reads them (a
	// part not an object, functionCall's key); calls: a part's
	// functionCall is an object.
	partsErr, otherErr error
	calls              bool
}

// match is matchKey of the member's key and key, a protocol key (plain
// ASCII): a plain key of another length is another key.
func (s *geminiScan) match(m *geminiMembers, key string) keyMatch {
	if m.plain && m.k.end-m.k.start-2 != len(key) {
		return keyOther
	}
	return s.matchKey(m, key)
}

// matchKey is match past the lengths.
func (s *geminiScan) matchKey(m *geminiMembers, key string) keyMatch {
	q := raw(s.b, m.k)
	if m.plain && string(q[1:len(q)-1]) == key {
		return keyExact
	}
	km, err := matchKey(q, key, true)
	if err != nil && s.keyErr == nil {
		s.keyErr = err
	}
	return km
}

// wantA is the error of a value not of the JSON type the protocol has.
func wantA(what string) error { return fmt.Errorf("%w: want %s", errJSON, what) }

// geminiScanPart is one part as the pass read it: its span, whether it has a
// functionCall member, and the functionCall's span when an object.
type geminiScanPart struct {
	sp, fc span
	call   bool
}

// geminiParser parses a stream's chunks and keeps what the parses hand on
// (the chunk, its parts' spans) in blocks it allocates as the stream
// grows and never writes again, so that a chunk handed on (held, or to
// the gates outside) stays as it was parsed. A block no chunk points
// into any more is garbage: the parser keeps the current one only.
type geminiParser struct {
	chunks []geminiChunk
	spans  []span
	// made is the chunks and spans of the blocks so far; the next block
	// is as large (a stream's blocks double), within bounds.
	madeChunks, madeSpans int
	// parts is the scratch of the candidate being read, reused; in
	// partsBuf while they are few.
	parts    []geminiScanPart
	partsBuf [4]geminiScanPart
}

// The bounds of the blocks: the first of each is the least, a block past
// the first as large as those before it, up to the most (a span block
// larger when one chunk's parts need it).
const (
	geminiLeastChunks = 4
	geminiMostChunks  = 32
	geminiLeastSpans  = 16
	geminiMostSpans   = 256
)

// chunk returns a new zero chunk.
func (p *geminiParser) chunk() *geminiChunk {
	if len(p.chunks) == cap(p.chunks) {
		n := min(max(p.madeChunks, geminiLeastChunks), geminiMostChunks)
		p.chunks, p.madeChunks = make([]geminiChunk, 0, n), p.madeChunks+n
	}
	p.chunks = p.chunks[:len(p.chunks)+1]
	return &p.chunks[len(p.chunks)-1]
}

// spanBlock returns n spans of a block, for the parser to fill.
func (p *geminiParser) spanBlock(n int) []span {
	if cap(p.spans)-len(p.spans) < n {
		m := max(min(max(p.madeSpans, geminiLeastSpans), geminiMostSpans), n)
		p.spans, p.madeSpans = make([]span, 0, m), p.madeSpans+m
	}
	l := len(p.spans)
	p.spans = p.spans[:l+n]
	return p.spans[l : l+n : l+n]
}

// parseGeminiChunk parses the chunk b: its first candidate's role, parts,
// calls and finish reason, whether others hold calls, its responseId.
// An error member that is not null is the upstream's error
// (*upstreamStreamError).
func parseGeminiChunk(b []byte) (*geminiChunk, error) {
	var p geminiParser
	return p.parse(b)
}

// parse is parseGeminiChunk, the chunk and its spans kept in p's blocks.
func (p *geminiParser) parse(b []byte) (*geminiChunk, error) {
	var s geminiScan
	s.b, s.p = b, p
	r := s.space(0)
	if r >= len(b) || b[r] != '{' {
		if !validJSON(b) {
			return nil, errJSON
		}
		return nil, wantA("an object")
	}
	s.c = p.chunk()
	s.c.firstCall = -1
	end, err := s.top(r)
	if err == nil && s.space(end) != len(b) {
		err = errJSON
	}
	if err != nil {
		return nil, err
	}
	if s.keyErr != nil {
		return nil, s.keyErr
	}
	s.c.compact = !s.spaced
	return s.chunk()
}

// top reads the top-level object at b[i], its error, responseId and
// candidates, and returns its end.
func (s *geminiScan) top(i int) (int, error) {
	b := s.b
	m := s.object(i)
	for {
		if more, err := s.nextMember(&m); err != nil || !more {
			return m.end, err
		}
		me, mi, mc := s.match(&m, "error"), s.match(&m, "responseId"), s.match(&m, "candidates")
		var (
			end int
			err error
		)
		if s.candsKey.next(mc) && m.at < len(b) && b[m.at] == '[' {
			end, err = s.candidates(m.at)
		} else {
			end, err = s.skip(m.at, 1)
		}
		if err != nil {
			return 0, err
		}
		v := span{m.at, end}
		s.errKey.see(me, v)
		s.idKey.see(mi, v)
		s.candsKey.see(mc, v)
		if err := s.endMember(&m, end); err != nil {
			return 0, err
		}
	}
}

// chunk is the chunk read, or the error, as the chunk was read field by
// field: the error member, the responseId, the candidates, then each
// candidate in order, then the first.
func (s *geminiScan) chunk() (*geminiChunk, error) {
	b, c := s.b, s.c
	if e, ok, err := s.errKey.result("error"); err != nil {
		return nil, err
	} else if ok && kind(b, e) != 'n' {
		return nil, &upstreamStreamError{Data: append([]byte(nil), b...)}
	}
	if id, ok, err := s.idKey.result("responseId"); err == nil && ok && kind(b, id) == '"' {
		c.id = id
	}
	cs, ok, err := s.candsKey.result("candidates")
	c.hasCands = ok
	switch {
	case err != nil:
		return nil, err
	case !ok || kind(b, cs) == 'n':
		return c, nil
	case kind(b, cs) != '[':
		return nil, wantA("an array")
	case s.n == 0:
		return c, nil // no candidate
	case s.candsErr != nil:
		return nil, s.candsErr
	case s.candErr != nil:
		return nil, s.candErr
	}
	return c, nil
}

// candidates reads the candidates array at b[i] and returns its end. Each
// is read in order as the field-by-field reading read it: the first of
// index 0 is the chunk's candidate (read by candidate), another notes
// whether it holds calls; past an error the rest is stepped over.
func (s *geminiScan) candidates(i int) (int, error) {
	b := s.b
	j := s.space(i + 1)
	if j < len(b) && b[j] == ']' {
		return j + 1, nil
	}
	for {
		var (
			end int
			err error
		)
		s.cand = geminiCand{}
		if s.candsErr == nil && j < len(b) && b[j] == '{' {
			end, err = s.candidate(j)
		} else {
			end, err = s.skip(j, 2)
		}
		if err != nil {
			return 0, err
		}
		s.n++
		if s.candsErr == nil {
			s.candsErr = s.take(span{j, end})
		}
		if end, err := s.after(end, ']', &j); err != nil || j < 0 {
			return end, err
		}
	}
}

// take places the candidate at sp, read as s.cand: the chunk's candidate
// when it is the first of index 0, else another, whose calls it notes.
// The error is the candidates' (an index, another's calls).
func (s *geminiScan) take(sp span) error {
	b, c, e := s.b, s.c, &s.cand
	idx := 0
	if e.obj {
		i, ok, err := e.index.result("index")
		if err != nil {
			return err
		}
		if ok && kind(b, i) != 'n' && string(raw(b, i)) != "0" {
			idx = -1 // another candidate's
		}
	}
	if idx == 0 && !c.hasCand() {
		c.cand = sp
		s.candErr = s.first()
		return nil
	}
	c.other = true
	calls, err := e.otherCalls(b)
	c.otherCalls = c.otherCalls || calls
	return err
}

// otherCalls is candidateCalls of the candidate read as e.
func (e *geminiCand) otherCalls(b []byte) (bool, error) {
	if !e.obj {
		return false, nil
	}
	content, ok, err := e.content.result("content")
	if err != nil || !ok || kind(b, content) != '{' {
		return false, err
	}
	ps, ok, err := e.parts.result("parts")
	if err != nil || !ok || kind(b, ps) != '[' {
		return false, err
	}
	return e.calls, e.otherErr
}

// first reads the chunk's candidate, read as s.cand, as the field-by-field
// reading did: its finish reason, role and parts, and which parts are
// calls (the parts are the scratch's).
func (s *geminiScan) first() error {
	b, c, e := s.b, s.c, &s.cand
	if !e.obj {
		return wantA("an object")
	}
	if f, ok, err := e.finish.result("finishReason"); err != nil {
		return err
	} else if c.hasFinishMember = ok; ok && kind(b, f) != 'n' {
		c.finish = f
		c.malformed = string(raw(b, f)) == `"`+geminiMalformed+`"`
	}
	content, ok, err := e.content.result("content")
	c.hasContent = ok
	if err != nil || !ok || kind(b, content) != '{' {
		return err
	}
	if role, ok, err := e.role.result("role"); err != nil {
		return err
	} else if ok && kind(b, role) != 'n' {
		if kind(b, role) != '"' {
			return wantA("a string") // as optStr
		}
		c.role = role
	}
	ps, ok, err := e.parts.result("parts")
	if err != nil || !ok || kind(b, ps) == 'n' {
		return err
	}
	if kind(b, ps) != '[' {
		return wantA("an array")
	}
	if e.partsErr != nil {
		return e.partsErr
	}
	parts := s.p.parts
	if len(parts) == 0 {
		return nil
	}
	calls := 0
	for i, p := range parts {
		if p.call && c.firstCall < 0 {
			c.firstCall = i
		}
		if p.fc != (span{}) {
			calls++
		}
	}
	n := len(parts)
	if calls > 0 {
		n *= 2
	}
	blk := s.p.spanBlock(n)
	c.parts = blk[:len(parts):len(parts)]
	for i, p := range parts {
		c.parts[i] = p.sp
	}
	if calls > 0 {
		c.fcs = blk[len(parts):]
		for i, p := range parts {
			c.fcs[i] = p.fc
		}
	}
	return nil
}

// candidate reads the candidate object at b[i] into s.cand and returns
// its end: its index, finishReason and content, and of its content (the
// member spelled exactly, when an object) the role and parts.
func (s *geminiScan) candidate(i int) (int, error) {
	b, e := s.b, &s.cand
	e.obj = true
	if s.p.parts == nil {
		s.p.parts = s.p.partsBuf[:0]
	}
	s.p.parts = s.p.parts[:0]
	m := s.object(i)
	for {
		if more, err := s.nextMember(&m); err != nil || !more {
			return m.end, err
		}
		mi, mf, mc := s.match(&m, "index"), s.match(&m, "finishReason"), s.match(&m, "content")
		var (
			end int
			err error
		)
		if e.content.next(mc) && m.at < len(b) && b[m.at] == '{' {
			end, err = s.content(m.at)
		} else {
			end, err = s.skip(m.at, 3)
		}
		if err != nil {
			return 0, err
		}
		v := span{m.at, end}
		e.index.see(mi, v)
		e.finish.see(mf, v)
		e.content.see(mc, v)
		if err := s.endMember(&m, end); err != nil {
			return 0, err
		}
	}
}

// content reads the content object at b[i] into s.cand and returns its
// end: its role and parts, and each part (of the parts spelled exactly,
// when an array).
func (s *geminiScan) content(i int) (int, error) {
	b, e := s.b, &s.cand
	m := s.object(i)
	for {
		if more, err := s.nextMember(&m); err != nil || !more {
			return m.end, err
		}
		mr, mp := s.match(&m, "role"), s.match(&m, "parts")
		var (
			end int
			err error
		)
		if e.parts.next(mp) && m.at < len(b) && b[m.at] == '[' {
			end, err = s.partList(m.at)
		} else {
			end, err = s.skip(m.at, 4)
		}
		if err != nil {
			return 0, err
		}
		v := span{m.at, end}
		e.role.see(mr, v)
		e.parts.see(mp, v)
		if err := s.endMember(&m, end); err != nil {
			return 0, err
		}
	}
}

// partList reads the parts array at b[i] into the scratch and s.cand,
// and returns its end.
func (s *geminiScan) partList(i int) (int, error) {
	b, e := s.b, &s.cand
	s.p.parts = s.p.parts[:0]
	j := s.space(i + 1)
	if j < len(b) && b[j] == ']' {
		return j + 1, nil
	}
	for {
		var (
			end int
			err error
		)
		if j < len(b) && b[j] == '{' {
			end, err = s.part(j)
		} else {
			s.p.parts = append(s.p.parts, geminiScanPart{})
			end, err = s.skip(j, 5)
			if e.otherErr == nil {
				e.otherErr = wantA("an object")
			}
		}
		if err != nil {
			return 0, err
		}
		s.p.parts[len(s.p.parts)-1].sp = span{j, end}
		if end, err := s.after(end, ']', &j); err != nil || j < 0 {
			return end, err
		}
	}
}

// part reads the part object at b[i], as the last of the scratch, and
// returns its end: its functionCall, and the text and thought candidate
// checks.
func (s *geminiScan) part(i int) (int, error) {
	s.fcKey, s.textKey, s.thought = keyFind{}, keyFind{}, keyFind{}
	m := s.object(i)
	for {
		if more, err := s.nextMember(&m); err != nil {
			return 0, err
		} else if !more {
			break
		}
		mf, mt, mh := s.match(&m, "functionCall"), s.match(&m, "text"), s.match(&m, "thought")
		end, err := s.skip(m.at, 6)
		if err != nil {
			return 0, err
		}
		v := span{m.at, end}
		s.fcKey.see(mf, v)
		s.textKey.see(mt, v)
		s.thought.see(mh, v)
		if err := s.endMember(&m, end); err != nil {
			return 0, err
		}
	}
	s.partRead()
	return m.end, nil
}

// partRead records the part read last.
func (s *geminiScan) partRead() {
	b, e := s.b, &s.cand
	var p geminiScanPart
	fc, call, err := s.fcKey.result("functionCall")
	if err != nil {
		if e.partsErr == nil {
			e.partsErr = err
		}
		if e.otherErr == nil {
			e.otherErr = err
		}
	} else {
		p.call = call
		if call && kind(b, fc) == '{' {
			p.fc = fc
			e.calls = true
		}
		if e.partsErr == nil {
			if _, _, err := s.textKey.result("text"); err != nil {
				e.partsErr = err
			} else if _, _, err := s.thought.result("thought"); err != nil {
				e.partsErr = err
			}
		}
	}
	s.p.parts = append(s.p.parts, p)
}

// space returns the index of the first byte at or after i that is not
// space, noting space met.
func (s *geminiScan) space(i int) int {
	j := skipSpace(s.b, i)
	s.spaced = s.spaced || j != i
	return j
}

// object starts members over the object at b[i].
func (s *geminiScan) object(i int) geminiMembers {
	m := geminiMembers{i: s.space(i + 1)}
	if m.i < len(s.b) && s.b[m.i] == '}' {
		m.i, m.end = -1, m.i+1
	}
	return m
}

// nextMember checks and reads the next member's key and colon, false
// after the last.
func (s *geminiScan) nextMember(m *geminiMembers) (bool, error) {
	b, i := s.b, m.i
	if i < 0 {
		return false, nil
	}
	if i >= len(b) || b[i] != '"' {
		return false, errJSON
	}
	end, plain := validKey(b, i)
	if end < 0 {
		return false, errJSON
	}
	c := s.space(end)
	if c >= len(b) || b[c] != ':' {
		return false, errJSON
	}
	m.k, m.plain, m.at = span{i, end}, plain, s.space(c+1)
	return true, nil
}

// validKey is validString of the key at b[i], and whether the key is
// plain (plainASCII of its inside), in one reading of its bytes.
func validKey(b []byte, i int) (end int, plain bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < ' ' || c == '\\' || c >= utf8.RuneSelf:
			return validString(b, i), false
		}
	}
	return -1, false
}

// endMember checks what follows the member's value, which ends at end.
func (s *geminiScan) endMember(m *geminiMembers, end int) error {
	end, err := s.after(end, '}', &m.i)
	if m.i < 0 {
		m.end = end
	}
	return err
}

// after checks what follows a value that ends at b[i] in a container
// closed by end: next is set to the next member's or element's first
// byte, -1 after the last, when the container's end is returned.
func (s *geminiScan) after(i int, end byte, next *int) (int, error) {
	b := s.b
	i = s.space(i)
	switch {
	case i >= len(b):
		return 0, errJSON
	case b[i] == ',':
		*next = s.space(i + 1)
		return 0, nil
	case b[i] == end:
		*next = -1
		return i + 1, nil
	}
	return 0, errJSON
}

// skip checks the JSON value at b[i], open objects and arrays deep, as
// validJSON checks it (the nesting bound counted from the document's
// top), and returns its end.
func (s *geminiScan) skip(i, open int) (int, error) {
	b := s.b
	var buf [32]byte
	stack := buf[:0] // the containers opened in the value, '{' or '['
	for {
		// A value starts at i.
		if i >= len(b) {
			return 0, errJSON
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if open+len(stack) >= maxNesting {
				return 0, errJSON
			}
			stack = append(stack, c)
			i = s.space(i + 1)
			if i < len(b) && b[i] == c+2 { // '}' or ']'
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = s.keyThenColon(i); i < 0 {
					return 0, errJSON
				}
			}
			continue
		case c == '"':
			i = validString(b, i)
		case c == 't':
			i = literal(b, i, "true")
		case c == 'f':
			i = literal(b, i, "false")
		case c == 'n':
			i = literal(b, i, "null")
		case c == '-' || '0' <= c && c <= '9':
			i = validNumber(b, i)
		default:
			return 0, errJSON
		}
		if i < 0 {
			return 0, errJSON
		}
		// A value ended at i: what follows closes its containers, or
		// separates it from the next.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			i = s.space(i)
			if i >= len(b) {
				return 0, errJSON
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return 0, errJSON
			}
			i = s.space(i + 1)
			if top == '{' {
				if i = s.keyThenColon(i); i < 0 {
					return 0, errJSON
				}
			}
			break
		}
	}
}

// keyThenColon is keyThenColon, noting space met.
func (s *geminiScan) keyThenColon(i int) int {
	b := s.b
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = validString(b, i); i < 0 {
		return -1
	}
	i = s.space(i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return s.space(i + 1)
}
