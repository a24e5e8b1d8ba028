package mcpguard

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/toolguard/toolguard/guard"
)

// The stdio transport of MCP: newline-delimited JSON-RPC on a server
// process's stdin and stdout. Stdio guards it with the same transport New
// returns: each message of the client becomes one POST whose answer is the
// server's message with the same id, so that every rule of the HTTP
// transport (calls, results, tools/list learned and fetched, limits,
// events) holds for a stdio server unchanged.

// StdioPipes are the four ends Stdio joins: the client's messages and
// what it reads, the server's stdin and its stdout.
type StdioPipes struct {
	ClientIn  io.Reader      // the client's messages, one a line (a wrapper's stdin)
	ClientOut io.Writer      // what the client reads (a wrapper's stdout)
	ServerIn  io.WriteCloser // the server's stdin; closed when ClientIn ends
	ServerOut io.Reader      // the server's stdout
}

// maxStdioRequests bounds the client's requests waiting for their answer
// at once; past it Stdio reads no further message of the client until
// one is answered (its answers to the server's requests, which never
// wait, are not counted).
const maxStdioRequests = 256

// errServerGone is the error of a request still waiting for its answer
// when the server's output ends.
var errServerGone = errors.New("mcpguard: the server's output ended before it answered")

// Stdio guards an MCP session over stdio between a client and a server
// process, as New guards one over Streamable HTTP, with the same options.
// It reads the client's messages from p.ClientIn, one JSON-RPC message a
// line, and writes them to p.ServerIn: each tools/call checked (cleaned
// arguments forwarded cleaned, invalid ones answered on p.ClientOut with an
// isError result and the feedback, never forwarded), everything else as it
// came, byte for byte, a batch included. It reads the server's messages
// from p.ServerOut and writes them to p.ClientOut: results checked against
// their tool's outputSchema, tools/list results learned,
// notifications/tools/list_changed honoured, the server's own requests and
// notifications as they came. A call of a tool it has not seen makes it
// send tools/list to the server itself (its answer never reaches the
// client). The session is one: the tools, and a PerSession limit's count,
// are this call's own (a PerThread limit counts the thread of ctx,
// guard.WithThread).
//
// A message of the client longer than MaxBody is not read: it is answered
// with a JSON-RPC error (id null, code -32600) and skipped, never
// buffered. One of the server longer than MaxBody is handed on as it
// comes, unread (the answer to a call whose result is to be checked is
// then passed with an event, or replaced by an isError result with
// WithFailClosed).
//
// Messages of the client reach the server in the order sent, but for a
// call that waits for its tool's tools/list; answers reach the client as
// they come. When p.ClientIn ends, p.ServerIn is closed (the server's cue
// to exit). Stdio returns when p.ServerOut ends (the server exited), with
// nil or the error that stopped a read, once every request it was
// handling is answered (a request still waiting gets a JSON-RPC error); a
// read of p.ClientIn then in progress ends when the caller closes it.
// Cancelling ctx abandons the requests waiting for an answer.
func Stdio(ctx context.Context, p StdioPipes, opts ...Option) error {
	s := &stdioSession{
		pipes:   p,
		pending: make(map[string]chan stdioReply),
		gone:    make(chan struct{}),
	}
	s.t = New(s, opts...).(*transport)
	// Each session its own URL, so its tools and a PerSession limit's
	// counts (in a store shared by other wrappers) are its own.
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	s.url = "http://stdio.mcpguard.invalid/" + hex.EncodeToString(nonce[:])
	if req, err := http.NewRequest(http.MethodPost, s.url, nil); err == nil {
		s.key = keyOf(withStdioHeaders(req))
	}

	clientDone := make(chan error, 1)
	go func() {
		err := s.readClient(ctx)
		_ = p.ServerIn.Close() // the server's cue to exit
		clientDone <- err
	}()
	var err error
	select {
	case err = <-s.serverDone(ctx):
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.wmu.Lock()
	s.stopped = true
	s.wmu.Unlock()
	s.wg.Wait()
	select {
	case cerr := <-clientDone:
		if cerr != nil && !errors.Is(cerr, io.EOF) && !errors.Is(cerr, errStopped) {
			err = errors.Join(fmt.Errorf("mcpguard: reading the client's messages: %w", cerr), err)
		}
	default: // still reading: it ends with p.ClientIn
	}
	return err
}

// serverDone reads the server's messages on a goroutine of its own and
// returns the channel of its end.
func (s *stdioSession) serverDone(ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.readServer(ctx) }()
	return done
}

// errStopped ends the reading of the client's messages once the session
// is over.
var errStopped = errors.New("mcpguard: the session is over")

// stdioSession is one guarded stdio session; it is the base
// http.RoundTripper of its transport.
type stdioSession struct {
	pipes StdioPipes
	t     *transport
	url   string
	key   listKey // the session's key in the tool cache

	smu sync.Mutex // one message at a time to the server
	cmu sync.Mutex // one message at a time to the client

	pmu     sync.Mutex
	pending map[string]chan stdioReply // the client's (and the transport's) requests waiting, by id
	gone    chan struct{}              // closed when the server's output ends

	wmu     sync.Mutex
	stopped bool           // the session is over: no request is handled any more
	wg      sync.WaitGroup // the requests being handled
}

// stdioReply is a message of the server answering a request: its bytes,
// or, for one longer than MaxBody, the bytes read and the rest of its
// line, which the server's reader waits on until done is closed.
type stdioReply struct {
	line []byte
	rest io.Reader
	done chan struct{}
}

// withStdioHeaders sets the headers of the requests Stdio makes.
func withStdioHeaders(r *http.Request) *http.Request {
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json")
	return r
}

// readClient reads the client's messages until its input ends: each
// request handled on a goroutine of its own once it reached the server,
// every other message in turn.
func (s *stdioSession) readClient(ctx context.Context) error {
	lr := newLineReader(s.pipes.ClientIn)
	slots := make(chan struct{}, maxStdioRequests)
	for {
		line, rest, err := lr.next()
		switch {
		case rest != nil:
			_, _ = io.Copy(io.Discard, rest)
			reason := fmt.Errorf("mcpguard: a message of the client is larger than %d bytes, the bound of what is read: it was not sent to the server", MaxBody)
			s.t.emit(ctx, guard.Event{Kind: guard.EventUnguarded, Err: reason})
			s.writeClient(rpcError(nil, -32600, reason.Error()), nil)
		case len(bytes.TrimSpace(line)) > 0:
			m, derr := decodeMessage(line)
			if derr != nil || m.method == "" || m.id == nil {
				s.handle(ctx, line, nil) // never waits for an answer
				break
			}
			select {
			case slots <- struct{}{}:
			case <-s.gone:
				return errStopped
			case <-ctx.Done():
				return ctx.Err()
			}
			s.wmu.Lock()
			if s.stopped {
				s.wmu.Unlock()
				return errStopped
			}
			s.wg.Add(1)
			s.wmu.Unlock()
			sent := make(chan struct{})
			go func() {
				defer s.wg.Done()
				defer func() { <-slots }()
				s.handle(ctx, line, sent)
			}()
			select {
			case <-sent:
			case <-s.gone:
				return errStopped
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err != nil {
			return err
		}
	}
}

// sentKey marks a request's context with the channel to close once its
// message was written to the server (or it was answered without).
type sentKey struct{}

// handle passes one message of the client through the transport and
// writes its answer, if any, to the client. sent, when not nil, is
// closed once the message reached the server or was answered.
func (s *stdioSession) handle(ctx context.Context, line []byte, sent chan struct{}) {
	var once sync.Once
	signal := func() {
		if sent != nil {
			once.Do(func() { close(sent) })
		}
	}
	defer signal()
	rctx := ctx
	if sent != nil {
		rctx = context.WithValue(ctx, sentKey{}, signal)
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, s.url, bytes.NewReader(line))
	if err != nil {
		return
	}
	resp, err := s.t.RoundTrip(withStdioHeaders(req))
	signal()
	if err != nil {
		if m, derr := decodeMessage(line); derr == nil && m.id != nil && m.method != "" {
			s.writeClient(rpcError(m.id, -32603, err.Error()), nil)
		}
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted {
		return
	}
	s.writeClient(nil, resp.Body)
}

// RoundTrip is the transport's base: it writes r's message to the server
// and, for a request, waits for the server's answer (a 200 response
// holding it); any other message is answered 202, empty.
func (s *stdioSession) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	m, derr := decodeMessage(body)
	if derr != nil || m.method == "" || m.id == nil {
		if err := s.send(r.Context(), body); err != nil {
			return nil, err
		}
		return stdioResponse(r, http.StatusAccepted, http.NoBody), nil
	}
	id := idKey(m.id)
	ch := make(chan stdioReply, 1)
	s.pmu.Lock()
	_, dup := s.pending[id]
	if !dup {
		s.pending[id] = ch
	}
	s.pmu.Unlock()
	if dup {
		msg := rpcError(m.id, -32600, "mcpguard: a request with this id is already waiting for its answer")
		return stdioResponse(r, http.StatusOK, io.NopCloser(bytes.NewReader(msg))), nil
	}
	forget := func() {
		s.pmu.Lock()
		if s.pending[id] == ch {
			delete(s.pending, id)
		}
		s.pmu.Unlock()
	}
	if err := s.send(r.Context(), body); err != nil {
		forget()
		return nil, err
	}
	select {
	case rep := <-ch:
		if rep.rest == nil {
			return stdioResponse(r, http.StatusOK, io.NopCloser(bytes.NewReader(rep.line))), nil
		}
		return stdioResponse(r, http.StatusOK, &replyBody{Reader: io.MultiReader(bytes.NewReader(rep.line), rep.rest), rest: rep.rest, done: rep.done}), nil
	case <-s.gone:
		forget()
		return nil, errServerGone
	case <-r.Context().Done():
		forget()
		return nil, r.Context().Err()
	}
}

// send writes one message to the server, on a line of its own.
func (s *stdioSession) send(ctx context.Context, msg []byte) error {
	if bytes.ContainsAny(msg, "\r\n") {
		var b bytes.Buffer
		if err := json.Compact(&b, msg); err == nil {
			msg = b.Bytes()
		}
	}
	s.smu.Lock()
	_, err := s.pipes.ServerIn.Write(append(msg[:len(msg):len(msg)], '\n'))
	s.smu.Unlock()
	if signal, ok := ctx.Value(sentKey{}).(func()); ok {
		signal()
	}
	if err != nil {
		return fmt.Errorf("mcpguard: writing to the server: %w", err)
	}
	return nil
}

// readServer reads the server's messages until its output ends: an answer
// to a request waiting goes to that request, every other message to the
// client as it came.
func (s *stdioSession) readServer(ctx context.Context) error {
	defer close(s.gone)
	lr := newLineReader(s.pipes.ServerOut)
	for {
		line, rest, err := lr.next()
		switch {
		case rest != nil:
			id, isResponse := headID(line)
			if ch := s.take(id, isResponse); ch != nil {
				done := make(chan struct{})
				ch <- stdioReply{line: line, rest: rest, done: done}
				select {
				case <-done:
				case <-ctx.Done():
					return ctx.Err()
				}
				break
			}
			s.t.emitFailOpen(ctx, guard.Event{Kind: guard.EventUnguarded,
				Err: fmt.Errorf("mcpguard: a message of the server is larger than %d bytes: handed on unread", MaxBody)})
			s.writeClient(line, rest)
		case len(bytes.TrimSpace(line)) > 0:
			m, derr := decodeMessage(line)
			if derr == nil && m.method == "" && m.id != nil {
				if ch := s.take(m.id, true); ch != nil {
					ch <- stdioReply{line: line}
					break
				}
			}
			if derr == nil && m.method == "notifications/tools/list_changed" {
				s.t.tools.forget(s.key)
			}
			s.writeClient(line, nil)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mcpguard: reading the server's messages: %w", err)
		}
	}
}

// take returns, and forgets, the channel of the request id is the answer
// to (nil for none, or when the message is not a response).
func (s *stdioSession) take(id []byte, isResponse bool) chan stdioReply {
	if id == nil || !isResponse {
		return nil
	}
	k := idKey(id)
	s.pmu.Lock()
	defer s.pmu.Unlock()
	ch := s.pending[k]
	delete(s.pending, k)
	return ch
}

// writeClient writes one message to the client: msg, then what body
// holds, then the newline that ends it.
func (s *stdioSession) writeClient(msg []byte, body io.Reader) {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	w := s.pipes.ClientOut
	_, _ = w.Write(msg)
	if body != nil {
		_, _ = io.Copy(w, body)
	}
	_, _ = w.Write([]byte{'\n'})
}

// stdioResponse is the response of the base transport to r.
func stdioResponse(r *http.Request, status int, body io.ReadCloser) *http.Response {
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          body,
		ContentLength: -1,
		Request:       r,
	}
}

// idKey is the key of a JSON-RPC id in the pending requests: a string id
// decoded (a server may escape it otherwise), a number as written.
func idKey(id []byte) string {
	if len(id) > 0 && id[0] == '"' {
		if s, ok := unquote(id); ok {
			return "s" + s
		}
	}
	return "n" + string(id)
}

// replyBody is the body of an answer longer than MaxBody: the bytes read
// and the rest of the line, read as it comes. Its end, or Close (which
// skips what is left of the line), lets the server's reader go on.
type replyBody struct {
	io.Reader
	rest io.Reader
	done chan struct{}
	once sync.Once
}

func (b *replyBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	if err != nil {
		b.once.Do(func() { close(b.done) })
	}
	return n, err
}

func (b *replyBody) Close() error {
	b.once.Do(func() {
		_, _ = io.Copy(io.Discard, b.rest)
		close(b.done)
	})
	return nil
}

// lineReader reads newline-delimited messages, at most MaxBody bytes of
// each.
type lineReader struct{ br *bufio.Reader }

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its line ending. For a line longer
// than MaxBody it returns what was read (a little past MaxBody) and
// rest, a reader of the rest of the line, which must be read to its end
// before next is called again. At the end of the input it returns the
// last line, if it had no newline, with io.EOF.
func (lr *lineReader) next() (line []byte, rest io.Reader, err error) {
	for {
		chunk, err := lr.br.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			if len(line) > MaxBody {
				return line, &lineRest{br: lr.br}, nil
			}
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > MaxBody {
			return line, bytes.NewReader(nil), err
		}
		return line, nil, err
	}
}

// lineRest reads the rest of a line, without its newline, from br.
type lineRest struct {
	br   *bufio.Reader
	done bool
}

func (r *lineRest) Read(p []byte) (int, error) {
	if r.done || len(p) == 0 {
		if r.done {
			return 0, io.EOF
		}
		return 0, nil
	}
	if r.br.Buffered() == 0 {
		if _, err := r.br.Peek(1); err != nil {
			r.done = true
			return 0, io.EOF
		}
	}
	b, _ := r.br.Peek(min(r.br.Buffered(), len(p)))
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		n := copy(p, bytes.TrimSuffix(b[:i], []byte("\r")))
		_, _ = r.br.Discard(i + 1)
		r.done = true
		return n, nil
	}
	n := copy(p, b)
	_, _ = r.br.Discard(n)
	return n, nil
}

// headID reads the top-level members of head, the start of a JSON-RPC
// message too long to read whole, and returns its id and whether it is a
// response (no method among the members read): nil when the id is not
// among the members head holds whole.
func headID(head []byte) (id []byte, isResponse bool) {
	i := skipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return nil, false
	}
	i++
	isResponse = true
	for i < len(head) {
		i = skipSpace(head, i)
		if i < len(head) && head[i] == ',' {
			i = skipSpace(head, i+1)
		}
		if i >= len(head) || head[i] != '"' {
			break
		}
		ke := skipString(head, i)
		if ke >= len(head) {
			break
		}
		key := head[i:ke]
		i = skipSpace(head, ke)
		if i >= len(head) || head[i] != ':' {
			break
		}
		vs := skipSpace(head, i+1)
		if vs >= len(head) {
			break
		}
		ve := skipValue(head, vs)
		if ve >= len(head) || ve == vs {
			break
		}
		switch {
		case keyIs(key, "id"):
			if v := head[vs:ve]; validID(v) {
				id = v
			}
		case keyIs(key, "method"):
			isResponse = false
		}
		i = ve
	}
	return id, isResponse && id != nil
}
