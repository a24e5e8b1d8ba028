package httpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/toolguard/toolguard/guard"
)

// bedrockRequest is a Converse request offering one tool, get_weather,
// whose city is a required string.
const bedrockRequest = `{"messages":[{"role":"user","content":[{"text":"Weather in Paris?"}]}],` +
	`"system":[{"text":"Be brief."}],` +
	`"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","description":"Get the weather",` +
	`"inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}}}],` +
	`"toolChoice":{"auto":{}}},"inferenceConfig":{"maxTokens":512}}`

// bedrockAnswer is a Converse answer: text, then a get_weather call with
// input.
func bedrockAnswer(id, input string) string {
	return `{"output":{"message":{"role":"assistant","content":[{"text":"Let me check."},` +
		`{"toolUse":{"toolUseId":"` + id + `","name":"get_weather","input":` + input + `}}]}},` +
		`"stopReason":"tool_use","usage":{"inputTokens":20,"outputTokens":9,"totalTokens":29},"metrics":{"latencyMs":120}}`
}

// bedrockStream is the ConverseStream of bedrockAnswer, the input in two
// fragments, as the events' sseEvents.
func bedrockStream(id string, fragments ...string) []streamEvent {
	evs := []streamEvent{
		{Event: "messageStart", Data: []byte(`{"role":"assistant"}`)},
		{Event: "contentBlockDelta", Data: []byte(`{"contentBlockIndex":0,"delta":{"text":"Let me "}}`)},
		{Event: "contentBlockDelta", Data: []byte(`{"contentBlockIndex":0,"delta":{"text":"check."}}`)},
		{Event: "contentBlockStop", Data: []byte(`{"contentBlockIndex":0}`)},
		{Event: "contentBlockStart", Data: []byte(`{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"` + id + `","name":"get_weather"}}}`)},
	}
	for _, f := range fragments {
		d, _ := json.Marshal(f)
		evs = append(evs, streamEvent{Event: "contentBlockDelta", Data: []byte(`{"contentBlockIndex":1,"delta":{"toolUse":{"input":` + string(d) + `}}}`)})
	}
	return append(evs,
		streamEvent{Event: "contentBlockStop", Data: []byte(`{"contentBlockIndex":1}`)},
		streamEvent{Event: "messageStop", Data: []byte(`{"stopReason":"tool_use"}`)},
		streamEvent{Event: "metadata", Data: []byte(`{"usage":{"inputTokens":20,"outputTokens":9,"totalTokens":29},"metrics":{"latencyMs":120}}`)})
}

// bedrockServer is a loopback Bedrock: each request gets the next reply,
// and the requests are kept.
type bedrockServer struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []http.HandlerFunc
	requests []recordedRequest
}

type recordedRequest struct {
	path   string // escaped, as sent
	header http.Header
	body   []byte
}

func newBedrockServer(t *testing.T, replies ...http.HandlerFunc) *bedrockServer {
	s := &bedrockServer{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, recordedRequest{r.URL.EscapedPath(), r.Header.Clone(), b})
		s.mu.Unlock()
		if n >= len(s.replies) {
			http.Error(w, `{"message":"no more replies"}`, http.StatusInternalServerError)
			return
		}
		s.replies[n](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *bedrockServer) got() []recordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recordedRequest(nil), s.requests...)
}

// converseJSON answers with body.
func converseJSON(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// converseStream answers with the events framed, then the raw bytes of
// tail (a cut or corrupt message).
func converseStream(evs []streamEvent, tail ...byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", eventStreamType)
		for _, ev := range evs {
			w.Write(formatEventStream(ev))
			w.(http.Flusher).Flush()
		}
		w.Write(tail)
	}
}

// bedrockURL is the Converse path of a model whose id is an ARN, escaped
// as the AWS SDK escapes it.
const bedrockModel = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-v1:0"

func bedrockURL(srv *bedrockServer, op string) string {
	return srv.URL + "/model/" + strings.NewReplacer(":", "%3A", "/", "%2F").Replace(bedrockModel) + "/" + op
}

// readClientStream reads the client's event stream.
func readClientStream(t *testing.T, b []byte) []streamEvent {
	t.Helper()
	evs, err := readEventStream(bytes.NewReader(b), MaxBody)
	if err != nil {
		t.Fatalf("the client's stream does not read: %v", err)
	}
	return evs
}

func TestBedrockPath(t *testing.T) {
	tests := []struct {
		path, model string
		stream, ok  bool
	}{
		{"/model/anthropic.claude-3-haiku-20240307-v1:0/converse", "anthropic.claude-3-haiku-20240307-v1:0", false, true},
		{"/model/us.amazon.nova-pro-v1:0/converse-stream", "us.amazon.nova-pro-v1:0", true, true},
		{"/model/" + bedrockModel + "/converse", bedrockModel, false, true},
		{"/proxy/model/m/converse", "m", false, true},
		{"/model//converse", "", false, false},
		{"/model/m/invoke", "", false, false},
		{"/converse", "", false, false},
	}
	for _, tc := range tests {
		model, stream, ok := bedrockPath(tc.path)
		if model != tc.model || stream != tc.stream || ok != tc.ok {
			t.Errorf("bedrockPath(%q) = %q, %v, %v, want %q, %v, %v", tc.path, model, stream, ok, tc.model, tc.stream, tc.ok)
		}
	}
}

// A bad call is re-asked: the re-ask is the client's body with the
// assistant message replayed verbatim and one user message of toolResult
// blocks (status error for the refused call) appended, nothing else
// changed; the client reads the good answer.
func TestBedrockBadThenGoodSync(t *testing.T) {
	t.Parallel()
	bad := bedrockAnswer("tooluse_bad", `{"city":42}`)
	good := bedrockAnswer("tooluse_good", `{"city":"Paris"}`)
	srv := newBedrockServer(t, converseJSON(bad), converseJSON(good))
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), bedrockURL(srv, "converse"), []byte(bedrockRequest))
	got := srv.got()
	if len(got) != 2 {
		t.Fatalf("%d upstream requests, want 2", len(got))
	}
	if ex.resp.StatusCode != http.StatusOK || string(ex.body) != good {
		t.Errorf("the client read %d %s, want the good answer", ex.resp.StatusCode, ex.body)
	}
	var reask struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(got[1].body, &reask); err != nil || len(reask.Messages) != 3 {
		t.Fatalf("re-ask %s: %v, want three messages", got[1].body, err)
	}
	var badResp struct {
		Output struct {
			Message json.RawMessage `json:"message"`
		} `json:"output"`
	}
	json.Unmarshal([]byte(bad), &badResp)
	if string(reask.Messages[1]) != string(badResp.Output.Message) {
		t.Errorf("replayed %s, want the answer's message verbatim %s", reask.Messages[1], badResp.Output.Message)
	}
	var user struct {
		Role    string `json:"role"`
		Content []struct {
			ToolResult struct {
				ToolUseID string `json:"toolUseId"`
				Content   []struct {
					Text string `json:"text"`
				} `json:"content"`
				Status string `json:"status"`
			} `json:"toolResult"`
		} `json:"content"`
	}
	if err := json.Unmarshal(reask.Messages[2], &user); err != nil || user.Role != "user" || len(user.Content) != 1 {
		t.Fatalf("tool results %s: %v", reask.Messages[2], err)
	}
	tr := user.Content[0].ToolResult
	if tr.ToolUseID != "tooluse_bad" || tr.Status != "error" || len(tr.Content) != 1 || !strings.Contains(tr.Content[0].Text, "city") {
		t.Errorf("tool result %+v, want tooluse_bad's error naming city", tr)
	}
	// Nothing but the messages changed: the rest byte for byte.
	cut := strings.Index(bedrockRequest, `]}],"system"`) + len(`]}]`)
	if !bytes.HasPrefix(got[1].body, []byte(bedrockRequest[:cut-1])) || !bytes.HasSuffix(got[1].body, []byte(bedrockRequest[cut:])) {
		t.Errorf("re-ask %s\nchanged more than the messages of %s", got[1].body, bedrockRequest)
	}
	if want := "/model/" + strings.NewReplacer(":", "%3A", "/", "%2F").Replace(bedrockModel) + "/converse"; got[1].path != want {
		t.Errorf("re-ask path %s, want %s", got[1].path, want)
	}
	t.Logf("the server received on the re-ask: %s", got[1].body)
	t.Logf("the client read: %s", ex.body)
}

// Streamed: the first attempt's text reaches the client once, its bad
// call never; the client reads one well-formed event stream with the good
// call, whole, and the end.
func TestBedrockBadThenGoodStream(t *testing.T) {
	t.Parallel()
	srv := newBedrockServer(t,
		converseStream(bedrockStream("tooluse_bad", `{"city":`, `42}`)),
		converseStream(bedrockStream("tooluse_good", `{"ci`, `ty":"Paris"}`)))
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), bedrockURL(srv, "converse-stream"), []byte(bedrockRequest))
	if n := len(srv.got()); n != 2 {
		t.Fatalf("%d upstream requests, want 2", n)
	}
	if ct := ex.resp.Header.Get("Content-Type"); ct != eventStreamType {
		t.Errorf("Content-Type %q, want %q", ct, eventStreamType)
	}
	evs := readClientStream(t, ex.body)
	var kinds []string
	text, input := "", ""
	for _, ev := range evs {
		kinds = append(kinds, ev.Event)
		var e struct {
			Delta struct {
				Text    string `json:"text"`
				ToolUse struct {
					Input string `json:"input"`
				} `json:"toolUse"`
			} `json:"delta"`
		}
		json.Unmarshal(ev.Data, &e)
		text += e.Delta.Text
		input += e.Delta.ToolUse.Input
	}
	want := "messageStart contentBlockDelta contentBlockDelta contentBlockStop contentBlockStart contentBlockDelta contentBlockStop messageStop metadata"
	if strings.Join(kinds, " ") != want {
		t.Errorf("the client read events %s, want %s", strings.Join(kinds, " "), want)
	}
	if text != "Let me check." || input != `{"city":"Paris"}` {
		t.Errorf("the client read text %q and input %q", text, input)
	}
	if bytes.Contains(ex.body, []byte("tooluse_bad")) || !bytes.Contains(ex.body, []byte("tooluse_good")) {
		t.Errorf("the client read the bad call or not the good one")
	}
	for _, ev := range evs {
		t.Logf("the client read: %s %s", ev.Event, ev.Data)
	}
}

// Failing closed, calls still bad after the re-asks are refused with a 422
// whose body the AWS SDK reads as an API error of type invalid_tool_calls.
func TestBedrockFailClosed(t *testing.T) {
	t.Parallel()
	bad := bedrockAnswer("tooluse_bad", `{"city":42}`)
	srv := newBedrockServer(t, converseJSON(bad), converseJSON(bad))
	ex := do(t, New(nil, ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed())), context.Background(),
		bedrockURL(srv, "converse"), []byte(bedrockRequest))
	var body struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(ex.body, &body); err != nil || ex.resp.StatusCode != http.StatusUnprocessableEntity ||
		body.Type != "invalid_tool_calls" || !strings.Contains(body.Message, "city") {
		t.Errorf("the client read %d %s, want a 422 of __type invalid_tool_calls", ex.resp.StatusCode, ex.body)
	}
}

// A call of a tool Bedrock runs itself (server_tool_use) is not the
// client's: it is not validated.
func TestBedrockServerToolUse(t *testing.T) {
	resp := []byte(`{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"s1","name":"nova_grounding","type":"server_tool_use","input":{"q":1}}},` +
		`{"toolUse":{"toolUseId":"c1","name":"get_weather","input":{"city":"Paris"}}}]}},"stopReason":"tool_use"}`)
	calls, err := bedrockWire{}.calls(resp)
	if err != nil || len(calls) != 1 || calls[0].ID != "c1" {
		t.Errorf("calls = %+v, %v, want c1 alone", calls, err)
	}
	if _, err := (bedrockWire{}).calls([]byte(`{"output":{"message":{"role":"assistant","content":[{"functionCall":{"name":"x"}}]}}}`)); !isUnguardable(err) {
		t.Errorf("a block of an unknown kind: %v, want unguardable", err)
	}
}

// A stream whose framing cannot be read is refused before anything
// reaches the client: a corrupt CRC as unguardable, a message past
// MaxBody as too large; a stream cut inside a message is a dropped
// connection, which ModelRetry makes again.
func TestBedrockStreamBadFrames(t *testing.T) {
	t.Parallel()
	good := bedrockStream("tooluse_good", `{"city":"Paris"}`)
	corrupt := formatEventStream(good[len(good)-1])
	corrupt[len(corrupt)-6] ^= 1
	huge := frameLens(MaxBody+1, 0)[:12]
	cut := formatEventStream(good[len(good)-1])
	cut = cut[:len(cut)/2]
	zero := ModelRetry(guard.WithBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }))
	// The events up to the call: the text reached nothing yet (the first
	// event that commits the client's response is the text's).
	head := good[:1]
	tests := []struct {
		name     string
		tail     []byte
		retry    bool
		status   int
		typ      string
		requests int
	}{
		{"corrupt CRC", corrupt, false, http.StatusBadGateway, responseUnguardable, 1},
		{"frame past the bound", huge, false, http.StatusBadGateway, responseTooLarge, 1},
		{"cut mid-frame, retried", cut, true, http.StatusOK, "", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newBedrockServer(t, converseStream(head, tc.tail...), converseStream(good))
			mws := []Middleware{ToolArgValidation(guard.WithFailClosed())}
			if tc.retry {
				mws = append(mws, zero)
			}
			ex := do(t, New(nil, mws...), context.Background(), bedrockURL(srv, "converse-stream"), []byte(bedrockRequest))
			if ex.resp.StatusCode != tc.status {
				t.Fatalf("status %d %.160q, want %d", ex.resp.StatusCode, ex.body, tc.status)
			}
			if n := len(srv.got()); n != tc.requests {
				t.Errorf("%d upstream requests, want %d", n, tc.requests)
			}
			if tc.typ != "" {
				var body struct {
					Type string `json:"__type"`
				}
				if json.Unmarshal(ex.body, &body); body.Type != tc.typ {
					t.Errorf("the client read %s, want __type %s", ex.body, tc.typ)
				}
				return
			}
			evs := readClientStream(t, ex.body)
			if len(evs) != len(good) || !bytes.Contains(ex.body, []byte(`"Paris`)) {
				t.Errorf("the client read %d events, want the %d of the retried stream", len(evs), len(good))
			}
		})
	}
}

// A stream cut inside a message after text reached the client ends the
// client's stream with an exception event, never a message cut short.
func TestBedrockStreamCutAfterText(t *testing.T) {
	t.Parallel()
	good := bedrockStream("tooluse_good", `{"city":"Paris"}`)
	cut := formatEventStream(good[5])
	srv := newBedrockServer(t, converseStream(good[:5], cut[:len(cut)-3]...))
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), bedrockURL(srv, "converse-stream"), []byte(bedrockRequest))
	evs := readClientStream(t, ex.body)
	last := evs[len(evs)-1]
	if ex.resp.StatusCode != http.StatusOK || !strings.HasPrefix(last.Event, exceptionPrefix) || !strings.Contains(string(ex.body), "Let me ") {
		t.Errorf("the client read %d and %q last, want the text, then an exception", ex.resp.StatusCode, last.Event)
	}
	if bytes.Contains(ex.body, []byte("tooluse_good")) {
		t.Errorf("the client read the held call of a cut stream")
	}
}

// An exception from Bedrock after text reached the client reaches it as it
// came; classified as the AWS SDK would, it is retryable.
func TestBedrockStreamException(t *testing.T) {
	t.Parallel()
	good := bedrockStream("tooluse_good", `{"city":"Paris"}`)
	exc := streamEvent{Event: "exception:throttlingException", Data: []byte(`{"message":"Too many requests, please wait before trying again."}`)}
	srv := newBedrockServer(t, converseStream(append(good[:3:3], exc)))
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), bedrockURL(srv, "converse-stream"), []byte(bedrockRequest))
	evs := readClientStream(t, ex.body)
	last := evs[len(evs)-1]
	if last.Event != exc.Event || string(last.Data) != string(exc.Data) {
		t.Errorf("the client read %s %s last, want the exception as it came", last.Event, last.Data)
	}
	_, err := parseBedrockEvent(exc)
	var be *bedrockStreamError
	if !errors.As(err, &be) || be.ErrorCode() != "ThrottlingException" || be.StatusCode() != http.StatusTooManyRequests {
		t.Errorf("parseBedrockEvent(exception) = %v, want a ThrottlingException of status 429", err)
	}
}

// Bedrock pads its stream's events with a member "p" of random length:
// the message a re-ask replays is the role and the content alone, as
// Converse takes a message, not the padding.
func TestBedrockStreamPaddingNotReplayed(t *testing.T) {
	t.Parallel()
	pad := func(evs []streamEvent) []streamEvent {
		for i, ev := range evs {
			evs[i].Data = append([]byte(`{"p":"abcdefghijklmnop",`), ev.Data[1:]...)
		}
		return evs
	}
	srv := newBedrockServer(t,
		converseStream(pad(bedrockStream("tooluse_bad", `{"city":42}`))),
		converseStream(pad(bedrockStream("tooluse_good", `{"city":"Paris"}`))))
	ex := do(t, New(nil, ToolArgValidation()), context.Background(), bedrockURL(srv, "converse-stream"), []byte(bedrockRequest))
	got := srv.got()
	if len(got) != 2 || ex.resp.StatusCode != http.StatusOK {
		t.Fatalf("%d upstream requests, status %d", len(got), ex.resp.StatusCode)
	}
	want := `{"role":"assistant","content":[{"text":"Let me check."},{"toolUse":{"toolUseId":"tooluse_bad","name":"get_weather","input":{"city":42}}}]}`
	if !bytes.Contains(got[1].body, []byte(want)) || bytes.Contains(got[1].body, []byte(`"p"`)) {
		t.Errorf("the re-ask replays\n%s\nwant the message %s without padding", got[1].body, want)
	}
}

// A stream whose calls are valid and unchanged reaches the client as the
// upstream sent it, event for event (its padding, its input fragments,
// its text), through ToolArgValidation alone and through the stack; a
// call the guard cleans is written whole, cleaned, as before.
func TestBedrockStreamReleased(t *testing.T) {
	t.Parallel()
	upstream, err := os.ReadFile(filepath.Join(wireDir, "bedrock", "gate-accept.eventstream"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := os.ReadFile(filepath.Join(wireDir, "bedrock", "stream-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := readClientStream(t, upstream)
	for name, tr := range map[string]*Transport{
		"guarded": New(nil, ToolArgValidation()),
		"stack":   New(nil, ToolCallLimit(guard.WithRunLimit(1000)), ToolArgValidation(), ModelRetry()),
	} {
		srv := newBedrockServer(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", eventStreamType)
			w.Write(upstream)
		})
		got := readClientStream(t, do(t, tr, context.Background(), bedrockURL(srv, "converse-stream"), req).body)
		if len(got) != len(want) {
			t.Errorf("%s: the client read %d events, the upstream sent %d", name, len(got), len(want))
		}
		for i := 0; i < len(got) && i < len(want); i++ {
			if got[i].Event != want[i].Event || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Errorf("%s: event %d is %s %s, the upstream sent %s %s", name, i, got[i].Event, got[i].Data, want[i].Event, want[i].Data)
			}
		}
	}

	forecast := strings.Replace(bedrockRequest, `"properties":{"city":{"type":"string"}},"required":["city"]`,
		`"properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city","days"]`, 1)
	srv := newBedrockServer(t, converseStream(bedrockStream("tooluse_1", `{"city": "Paris", `, `"days": "3"}`)))
	evs := readClientStream(t, do(t, New(nil, ToolArgValidation()), context.Background(), bedrockURL(srv, "converse-stream"), []byte(forecast)).body)
	var inputs []string
	for _, ev := range evs {
		e, err := parseBedrockEvent(ev)
		if err != nil {
			t.Fatal(err)
		}
		if e.Delta != nil && e.Delta.ToolUse != nil {
			inputs = append(inputs, e.Delta.ToolUse.Input)
		}
	}
	if len(srv.got()) != 1 || len(inputs) != 1 || inputs[0] != `{"city":"Paris","days":3}` {
		t.Errorf("the client read the cleaned call's input as %q, want it whole and cleaned", inputs)
	}
}
