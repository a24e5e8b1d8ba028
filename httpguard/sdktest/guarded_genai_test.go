package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
	"google.golang.org/genai"
)

// The thought signatures of the Gemini exchanges, base64 as Gemini sends
// them, and the bytes genai decodes them to.
const (
	sigThought1 = "c2lnLXRob3VnaHQtMQ==" // sig-thought-1
	sigCall1    = "c2lnLWNhbGwtMQ=="     // sig-call-1
	sigCall2    = "c2lnLWNhbGwtMg=="     // sig-call-2
)

// geminiBadThenGood is the script of the Gemini exchanges: a first
// attempt that thinks (signed), says a preamble and makes a bad call
// signed with its own signature, as Gemini 2.5 and 3 sign calls; then
// the corrected call, days a numeric string the guard coerces, signed.
func geminiBadThenGood() []fp.Step {
	return []fp.Step{
		fp.Reply(fp.Thinking("The user wants a forecast.", sigThought1), fp.Text("Let me check."),
			fp.Call("get_weather", `{"city": 42}`).WithSignature(sigCall1)).WithUsage(20, 12),
		fp.Reply(fp.Text("Sorry."), fp.Call("get_weather", `{"city": "Paris", "days": "3"}`).WithSignature(sigCall2)).WithUsage(40, 9),
	}
}

// upstreamTap is the base transport of the guarded genai clients: it
// keeps each upstream response body (read whole before the transport
// sees it) beside the request that asked for it.
type upstreamTap struct {
	mu        sync.Mutex
	responses [][]byte
}

func (u *upstreamTap) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	u.mu.Lock()
	u.responses = append(u.responses, b)
	u.mu.Unlock()
	return resp, nil
}

func (u *upstreamTap) response(i int) []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.responses[i]
}

func guardedGenai(t *testing.T, srv *fp.Server, tap *upstreamTap, events *[]guard.Event, opts ...guard.ValidationOption) *genai.Client {
	t.Helper()
	var mu sync.Mutex
	opts = append(opts, guard.WithEventHandler(func(_ context.Context, e guard.Event) {
		mu.Lock()
		*events = append(*events, e)
		mu.Unlock()
	}))
	return genaiClient(t, srv, &http.Client{Transport: httpguard.New(tap, httpguard.ToolArgValidation(opts...))})
}

func genaiDaysConfig() *genai.GenerateContentConfig {
	return &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "get_weather", ParametersJsonSchema: daysParams(),
	}}}}}
}

// contents returns the contents of a generateContent request body, each
// as the bytes it holds.
func contents(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var r struct{ Contents []json.RawMessage }
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return r.Contents
}

// partsOf returns the parts of a content, each as the bytes it holds.
func partsOf(t *testing.T, content []byte) []json.RawMessage {
	t.Helper()
	var c struct{ Parts []json.RawMessage }
	if err := json.Unmarshal(content, &c); err != nil {
		t.Fatal(err)
	}
	return c.Parts
}

// candidateContent returns the content of a generateContent response's
// first candidate, as the bytes it holds.
func candidateContent(t *testing.T, body []byte) []byte {
	t.Helper()
	var r struct {
		Candidates []struct{ Content json.RawMessage }
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Candidates) == 0 {
		t.Fatalf("not a response with a candidate (%v): %s", err, body)
	}
	return r.Candidates[0].Content
}

// checkGeminiReask checks the re-ask the provider received: the client's
// contents, the rejected model turn as replayed (checked by the caller),
// and one user turn answering the call by name, without an id, with the
// violation under "error".
func checkGeminiReask(t *testing.T, srv *fp.Server, events []guard.Event) (reask []json.RawMessage) {
	t.Helper()
	checkReask(t, srv, events)
	reqs := srv.Requests()
	first, reask := contents(t, reqs[0].Body), contents(t, reqs[1].Body)
	if len(reask) != len(first)+2 || !bytes.Equal(reask[0], first[0]) {
		t.Fatalf("the re-ask's contents are not the client's plus two:\n%s", reqs[1].Body)
	}
	var answer struct {
		Role  string
		Parts []struct {
			FunctionResponse map[string]json.RawMessage `json:"functionResponse"`
		}
	}
	if err := json.Unmarshal(reask[len(reask)-1], &answer); err != nil {
		t.Fatal(err)
	}
	if answer.Role != "user" || len(answer.Parts) != 1 || answer.Parts[0].FunctionResponse == nil {
		t.Fatalf("the re-ask's last turn is not one functionResponse: %s", reask[len(reask)-1])
	}
	fr := answer.Parts[0].FunctionResponse
	var resp map[string]string
	if err := json.Unmarshal(fr["response"], &resp); err != nil || !strings.Contains(resp["error"], "/city: expected string, got 42") {
		t.Errorf("functionResponse.response = %s, want the violation under error", fr["response"])
	}
	if _, ok := fr["id"]; ok || string(fr["name"]) != `"get_weather"` {
		t.Errorf("functionResponse = %s, want the name and no id (the call had none)", reask[len(reask)-1])
	}
	return reask
}

// genai v1, sync, through httpguard.New: the bad call is re-asked, with
// the rejected turn replayed byte for byte as the provider sent it
// (thought and call signatures included) and a functionResponse naming
// the call with the violation under "error"; FunctionCalls() reads the
// corrected, coerced call, with no id where Gemini sent none, and its
// thought signature is the accepted call's.
func TestGuardedGenaiExchange(t *testing.T) {
	t.Parallel()
	srv := fp.New(geminiBadThenGood()...)
	defer srv.Close()
	var events []guard.Event
	tap := &upstreamTap{}
	resp, err := guardedGenai(t, srv, tap, &events).Models.GenerateContent(context.Background(), "gemini-2.5-flash",
		genai.Text("Weather in Paris for 3 days?"), genaiDaysConfig())
	if err != nil {
		t.Fatal(err)
	}
	reask := checkGeminiReask(t, srv, events)
	if sent, replayed := candidateContent(t, tap.response(0)), reask[1]; !bytes.Equal(sent, replayed) {
		t.Errorf("the rejected turn was not replayed byte for byte:\nsent     %s\nreplayed %s", sent, replayed)
	}
	for _, sig := range []string{sigThought1, sigCall1} {
		if !bytes.Contains(reask[1], []byte(`"thoughtSignature":"`+sig+`"`)) {
			t.Errorf("the replay lacks the signature %s: %s", sig, reask[1])
		}
	}

	tr := &transcript{title: "google.golang.org/genai v1 Models.GenerateContent, sync, through httpguard.New(nil, httpguard.ToolArgValidation())"}
	calls := resp.FunctionCalls()
	if len(calls) != 1 {
		t.Fatalf("FunctionCalls() = %+v", calls)
	}
	tr.read("FunctionCalls()[0].Name", calls[0].Name)
	tr.read("FunctionCalls()[0].ID", mustJSON(calls[0].ID))
	tr.read("FunctionCalls()[0].Args", mustJSON(calls[0].Args))
	if calls[0].ID != "" || calls[0].Name != "get_weather" || !jsonEq(t, mustJSON(calls[0].Args), correctedArgs) {
		t.Errorf("FunctionCalls()[0] = %+v", calls[0])
	}
	parts := resp.Candidates[0].Content.Parts
	var sig []byte
	for _, p := range parts {
		if p.FunctionCall != nil {
			sig = p.ThoughtSignature
		}
	}
	tr.read("Candidates[0].Content.Parts[functionCall].ThoughtSignature", string(sig))
	if string(sig) != "sig-call-2" {
		t.Errorf("the call's ThoughtSignature = %q, want the accepted call's", sig)
	}
	tr.read("Candidates[0].Content.Parts[0].Text", parts[0].Text)
	tr.read("UsageMetadata.CandidatesTokenCount", resp.UsageMetadata.CandidatesTokenCount)
	tr.check(t, "gemini", srv)
}

// genai v1, streamed through its iterator: the text reaches the program
// once (the first attempt's thought and preamble; the re-ask's text is
// not streamed again), the only call it reads is the corrected one, whole
// in one chunk, with no id and the accepted call's signature, and every
// chunk carries the first attempt's responseId. The re-ask replays the
// rejected turn's parts as the stream brought them, in order, byte for
// byte, signatures included.
func TestGuardedGenaiExchangeStream(t *testing.T) {
	t.Parallel()
	srv := fp.New(geminiBadThenGood()...)
	defer srv.Close()
	var events []guard.Event
	tap := &upstreamTap{}
	var text, thought strings.Builder
	var calls []*genai.FunctionCall
	var sigs []string
	ids := map[string]bool{}
	var last *genai.GenerateContentResponse
	for r, err := range guardedGenai(t, srv, tap, &events).Models.GenerateContentStream(context.Background(), "gemini-2.5-flash",
		genai.Text("Weather in Paris for 3 days?"), genaiDaysConfig()) {
		if err != nil {
			t.Fatal(err)
		}
		ids[r.ResponseID] = true
		for _, p := range r.Candidates[0].Content.Parts {
			switch {
			case p.FunctionCall != nil:
				calls = append(calls, p.FunctionCall)
				sigs = append(sigs, string(p.ThoughtSignature))
			case p.Thought:
				thought.WriteString(p.Text)
			default:
				text.WriteString(p.Text)
			}
		}
		last = r
	}
	reask := checkGeminiReask(t, srv, events)
	var streamed []json.RawMessage
	for _, line := range strings.Split(string(tap.response(0)), "\n") {
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data: "); ok {
			streamed = append(streamed, partsOf(t, candidateContent(t, []byte(data)))...)
		}
	}
	replayed := partsOf(t, reask[1])
	if len(replayed) != len(streamed) {
		t.Fatalf("the replay has %d parts, the stream brought %d:\n%s", len(replayed), len(streamed), reask[1])
	}
	for i := range streamed {
		if !bytes.Equal(streamed[i], replayed[i]) {
			t.Errorf("part %d: streamed %s, replayed %s", i, streamed[i], replayed[i])
		}
	}
	for _, sig := range []string{sigThought1, sigCall1} {
		if !bytes.Contains(reask[1], []byte(`"thoughtSignature":"`+sig+`"`)) {
			t.Errorf("the replay lacks the signature %s: %s", sig, reask[1])
		}
	}

	tr := &transcript{title: "google.golang.org/genai v1 Models.GenerateContentStream, read through its iterator, through httpguard.New(nil, httpguard.ToolArgValidation())"}
	if len(calls) != 1 {
		t.Fatalf("the stream carried %d calls: %+v", len(calls), calls)
	}
	tr.read("FunctionCalls() over the chunks, [0].Name", calls[0].Name)
	tr.read("FunctionCalls() over the chunks, [0].ID", mustJSON(calls[0].ID))
	tr.read("FunctionCalls() over the chunks, [0].Args", mustJSON(calls[0].Args))
	tr.read("the call part's ThoughtSignature", sigs[0])
	tr.read("thought text over the chunks", thought.String())
	tr.read("text over the chunks", text.String())
	tr.read("responseIds over the chunks", len(ids))
	tr.read("last chunk FinishReason", last.Candidates[0].FinishReason)
	if calls[0].ID != "" || calls[0].Name != "get_weather" || !jsonEq(t, mustJSON(calls[0].Args), correctedArgs) || sigs[0] != "sig-call-2" {
		t.Errorf("the streamed call %+v, signature %q", calls[0], sigs[0])
	}
	if text.String() != "Let me check." || thought.String() != "The user wants a forecast." {
		t.Errorf("streamed text %q, thought %q: want each once, the first attempt's", text.String(), thought.String())
	}
	if len(ids) != 1 || last.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Errorf("responseIds %v, last chunk %+v", ids, last.Candidates[0])
	}
	tr.check(t, "gemini-stream", srv)
}

// An answer without calls, streamed through the guard, reaches genai's
// iterator as it came: every chunk with its content, the last with its
// finishReason (which Genkit's Gemini plugin needs: a candidate without
// content fails its call), the text once.
func TestGuardedGenaiStreamAnswerWithoutCalls(t *testing.T) {
	t.Parallel()
	srv := fp.New(fp.Reply(fp.Text("It is sunny in Paris.")))
	defer srv.Close()
	var events []guard.Event
	var text strings.Builder
	var last *genai.GenerateContentResponse
	n := 0
	for r, err := range guardedGenai(t, srv, &upstreamTap{}, &events).Models.GenerateContentStream(context.Background(), "gemini-2.5-flash",
		genai.Text("Weather in Paris?"), genaiDaysConfig()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if len(r.Candidates) != 1 || r.Candidates[0].Content == nil {
			t.Fatalf("chunk %d has no content: %+v", n, r)
		}
		for _, p := range r.Candidates[0].Content.Parts {
			text.WriteString(p.Text)
		}
		last = r
	}
	if text.String() != "It is sunny in Paris." || last.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Errorf("%d chunks: text %q, last finishReason %q; want the text once and STOP", n, text.String(), last.Candidates[0].FinishReason)
	}
}

// A tool declared with genai's OpenAPI-subset Schema (parameters: types
// upper-case, nullable) is validated with its JSON Schema meaning: a null
// where the schema says nullable is accepted, a null where it does not is
// refused and re-asked, an INTEGER given as "3" is coerced. What genai
// sends is that subset (checked), so the conversion is what guards it.
func TestGuardedGenaiOpenAPISchema(t *testing.T) {
	t.Parallel()
	srv := fp.New(
		fp.Reply(fp.Call("get_weather", `{"city": null, "unit": null, "days": "3"}`)),
		fp.Reply(fp.Call("get_weather", `{"city": "Paris", "unit": null, "days": "3"}`)),
	)
	defer srv.Close()
	var events []guard.Event
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
		Name: "get_weather",
		Parameters: &genai.Schema{
			Type: genai.TypeObject,
			Properties: map[string]*genai.Schema{
				"city": {Type: genai.TypeString},
				"unit": {Type: genai.TypeString, Enum: []string{"C", "F"}, Nullable: genai.Ptr(true)},
				"days": {Type: genai.TypeInteger, Format: "int32"},
			},
			Required: []string{"city", "unit"},
		},
	}}}}}
	resp, err := guardedGenai(t, srv, &upstreamTap{}, &events).Models.GenerateContent(context.Background(), "gemini-2.5-flash",
		genai.Text("Weather in Paris for 3 days?"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if b := string(reqs[0].Body); !strings.Contains(b, `"parameters":{`) || !strings.Contains(b, `"type":"OBJECT"`) || !strings.Contains(b, `"nullable":true`) {
		t.Fatalf("genai did not send the OpenAPI subset: %s", b)
	}
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2 (a re-ask for city, none for unit)", len(reqs))
	}
	var fb []string
	for _, e := range events {
		if e.Kind == guard.EventInvalid {
			fb = append(fb, e.Feedback)
		}
	}
	if len(fb) != 1 || !strings.Contains(fb[0], "/city") || strings.Contains(fb[0], "/unit") || strings.Contains(fb[0], "/days") ||
		!strings.Contains(string(reqs[1].Body), "/city") {
		t.Errorf("the feedback %q; want one, naming /city alone (unit is nullable, days coerced)", fb)
	}
	calls := resp.FunctionCalls()
	if len(calls) != 1 || !jsonEq(t, mustJSON(calls[0].Args), `{"city":"Paris","unit":null,"days":3}`) {
		t.Errorf("FunctionCalls() = %s, want the null unit kept and days coerced", mustJSON(calls))
	}
}

// Failing closed reaches genai as its APIError (422, INVALID_ARGUMENT,
// the violations in the message), sent once by genai even with its
// retries on.
func TestGuardedGenaiFailClosed(t *testing.T) {
	t.Parallel()
	bad := fp.Reply(fp.Call("get_weather", `{"city": 42}`))
	srv := fp.New(bad, bad, bad, bad, bad, bad)
	defer srv.Close()
	sent := &countingTransport{base: httpguard.New(nil, httpguard.ToolArgValidation(guard.WithMaxRetries(1), guard.WithFailClosed()))}
	attempts := int32(3)
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "g-test", Backend: genai.BackendGeminiAPI, HTTPClient: &http.Client{Transport: sent},
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL, RetryOptions: &genai.HTTPRetryOptions{Attempts: &attempts}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Models.GenerateContent(context.Background(), "gemini-2.5-flash", genai.Text("Weather in Paris?"), genaiDaysConfig())
	var ae genai.APIError
	if !errors.As(err, &ae) || ae.Code != 422 || ae.Status != "INVALID_ARGUMENT" || !strings.Contains(ae.Message, "/city") {
		t.Errorf("err %T %v, want genai.APIError 422 INVALID_ARGUMENT naming /city", err, err)
	}
	if n := sent.n(); n != 1 {
		t.Errorf("genai sent %d requests, want 1 (no retry of the 422)", n)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the provider got %d requests, want 2", n)
	}
}

// countingTransport counts the requests a client sends it.
type countingTransport struct {
	mu    sync.Mutex
	count int
	base  http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.count++
	c.mu.Unlock()
	return c.base.RoundTrip(r)
}

func (c *countingTransport) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}
