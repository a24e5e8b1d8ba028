package sdktest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/httpguard"
)

// The credentials of the program and of the loopback Bedrock, which
// verifies every request's signature with them.
var bedrockCreds = credentials.NewStaticCredentialsProvider("AKIDTOOLGUARDTEST", "toolguard-test-secret-key", "toolguard-session-token")

const (
	bedrockRegion = "us-east-1"
	bedrockModel  = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-v1:0"
)

// verifySigV4 recomputes r's signature with aws-sdk-go-v2's signer, from
// bedrockCreds, r's X-Amz-Date, the headers its Authorization names and
// body, and reports whether it is r's.
func verifySigV4(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	_, rest, ok := strings.Cut(auth, "SignedHeaders=")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") || !ok {
		return fmt.Errorf("no SigV4 Authorization: %q", auth)
	}
	signed, _, _ := strings.Cut(rest, ",")
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %v", err)
	}
	vr, err := http.NewRequest(r.Method, "http://"+r.Host+r.RequestURI, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for _, h := range strings.Split(signed, ";") {
		if h == "host" || h == "content-length" {
			continue
		}
		for _, v := range r.Header.Values(h) {
			vr.Header.Add(h, v)
		}
	}
	vr.ContentLength = int64(len(body))
	creds, _ := bedrockCreds.Retrieve(context.Background())
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, vr, hex.EncodeToString(sum[:]), "bedrock", bedrockRegion, at); err != nil {
		return err
	}
	if got := vr.Header.Get("Authorization"); got != auth {
		return fmt.Errorf("signature mismatch:\n sent     %s\n computed %s", auth, got)
	}
	return nil
}

// bedrockServer is a loopback Bedrock that refuses, as AWS does, every
// request whose SigV4 signature does not verify (403
// InvalidSignatureException), and answers the others with the next reply.
type bedrockServer struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []http.HandlerFunc
	received []bedrockReceived
}

type bedrockReceived struct {
	path     string
	body     []byte
	verified error // nil: the signature verified
}

func newBedrockServer(t *testing.T, replies ...http.HandlerFunc) *bedrockServer {
	s := &bedrockServer{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		verr := verifySigV4(r, body)
		s.mu.Lock()
		n := len(s.received)
		s.received = append(s.received, bedrockReceived{r.URL.EscapedPath(), body, verr})
		s.mu.Unlock()
		if verr != nil {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Amzn-ErrorType", "InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"message":%q}`, "The request signature we calculated does not match the signature you provided.")
			return
		}
		if n >= len(s.replies) {
			http.Error(w, `{"message":"no more replies"}`, http.StatusInternalServerError)
			return
		}
		s.replies[n](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *bedrockServer) got() []bedrockReceived {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bedrockReceived(nil), s.received...)
}

// bedrockAnswer is a Converse answer: text, then a get_weather call.
func bedrockAnswer(id, input string) string {
	return `{"output":{"message":{"role":"assistant","content":[{"text":"Let me check."},` +
		`{"toolUse":{"toolUseId":"` + id + `","name":"get_weather","input":` + input + `}}]}},` +
		`"stopReason":"tool_use","usage":{"inputTokens":20,"outputTokens":9,"totalTokens":29},"metrics":{"latencyMs":120}}`
}

func converseJSON(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// converseStream answers with ConverseStream events framed by the AWS
// SDK's own encoder: the text, then a get_weather call whose input comes
// in the fragments given.
func converseStream(id string, fragments ...string) http.HandlerFunc {
	type ev struct{ typ, payload string }
	evs := []ev{
		{"messageStart", `{"role":"assistant"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Let me "}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"check."}}`},
		{"contentBlockStop", `{"contentBlockIndex":0}`},
		{"contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"` + id + `","name":"get_weather"}}}`},
	}
	for _, f := range fragments {
		q, _ := json.Marshal(f)
		evs = append(evs, ev{"contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":` + string(q) + `}}}`})
	}
	evs = append(evs, ev{"contentBlockStop", `{"contentBlockIndex":1}`}, ev{"messageStop", `{"stopReason":"tool_use"}`},
		ev{"metadata", `{"usage":{"inputTokens":20,"outputTokens":9,"totalTokens":29},"metrics":{"latencyMs":120}}`})
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		enc := eventstream.NewEncoder()
		for _, e := range evs {
			var m eventstream.Message
			m.Headers.Set(":event-type", eventstream.StringValue(e.typ))
			m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			m.Headers.Set(":message-type", eventstream.StringValue("event"))
			m.Payload = []byte(e.payload)
			if err := enc.Encode(w, m); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

// bedrockSigner is the transport's signer hook filled with aws-sdk-go-v2's
// v4 signer and the program's credentials.
func bedrockSigner(creds aws.CredentialsProvider) httpguard.Middleware {
	signer := v4.NewSigner()
	return httpguard.WithSigner(func(ctx context.Context, r *http.Request, body []byte) error {
		c, err := creds.Retrieve(ctx)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		return signer.SignHTTP(ctx, c, r, hex.EncodeToString(sum[:]), "bedrock", bedrockRegion, time.Now())
	})
}

func newBedrockClient(srv *bedrockServer, tr http.RoundTripper) *bedrockruntime.Client {
	return bedrockruntime.New(bedrockruntime.Options{
		Region:           bedrockRegion,
		Credentials:      bedrockCreds,
		BaseEndpoint:     aws.String(srv.URL),
		HTTPClient:       &http.Client{Transport: tr},
		RetryMaxAttempts: 1,
	})
}

// bedrockWeatherTool is get_weather, whose city is a required string.
func bedrockWeatherTool() *types.ToolConfiguration {
	return &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
		Name:        aws.String("get_weather"),
		Description: aws.String("Get the weather"),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
			"required": []string{"city"}, "additionalProperties": false,
		})},
	}}}}
}

func weatherMessages() []types.Message {
	return []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "Weather in Paris?"}}}}
}

// checkBedrockReask checks what the loopback Bedrock received: two requests, each
// signature verified, the second the re-ask with the bad call's error
// result.
func checkBedrockReask(t *testing.T, got []bedrockReceived) {
	t.Helper()
	if len(got) != 2 {
		t.Fatalf("the server received %d requests, want 2", len(got))
	}
	for i, r := range got {
		if r.verified != nil {
			t.Errorf("request %d: %v", i, r.verified)
		}
	}
	if !bytes.Contains(got[1].body, []byte(`"toolUseId":"tooluse_bad"`)) || !bytes.Contains(got[1].body, []byte(`"status":"error"`)) {
		t.Errorf("the re-ask carries no error result for the bad call:\n%s", got[1].body)
	}
	t.Logf("the server received on the re-ask (%s, signature verified: %v):\n%s", got[1].path, got[1].verified == nil, got[1].body)
}

// Converse through httpguard with the AWS SDK's signer in the hook: a bad
// call re-asked, the re-ask signed again and verified by the server, the
// client reading the good call.
func TestBedrockConverseSigned(t *testing.T) {
	t.Parallel()
	srv := newBedrockServer(t, converseJSON(bedrockAnswer("tooluse_bad", `{"city":42}`)), converseJSON(bedrockAnswer("tooluse_good", `{"city":"Paris"}`)))
	client := newBedrockClient(srv, httpguard.New(nil, bedrockSigner(bedrockCreds), httpguard.ToolArgValidation()))
	out, err := client.Converse(context.Background(), &bedrockruntime.ConverseInput{
		ModelId: aws.String(bedrockModel), Messages: weatherMessages(), ToolConfig: bedrockWeatherTool(),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkBedrockReask(t, srv.got())
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	var use *types.ToolUseBlock
	for _, b := range msg.Content {
		if u, ok := b.(*types.ContentBlockMemberToolUse); ok {
			use = &u.Value
		}
	}
	if use == nil {
		t.Fatalf("the client read no toolUse: %+v", msg.Content)
	}
	var in map[string]any
	if err := use.Input.UnmarshalSmithyDocument(&in); err != nil || in["city"] != "Paris" || *use.ToolUseId != "tooluse_good" {
		t.Errorf("the client read toolUse %s %v (%v), want tooluse_good with city Paris", aws.ToString(use.ToolUseId), in, err)
	}
	t.Logf("the client read: stopReason %s, toolUse %s %s(%v)", out.StopReason, *use.ToolUseId, *use.Name, in)
}

// ConverseStream through httpguard, the stream framed by the AWS SDK's
// encoder: the text once, the good call whole, the re-ask's signature
// verified.
func TestBedrockConverseStreamSigned(t *testing.T) {
	t.Parallel()
	srv := newBedrockServer(t, converseStream("tooluse_bad", `{"city":`, `42}`), converseStream("tooluse_good", `{"ci`, `ty":"Paris"}`))
	client := newBedrockClient(srv, httpguard.New(nil, bedrockSigner(bedrockCreds), httpguard.ToolArgValidation()))
	out, err := client.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String(bedrockModel), Messages: weatherMessages(), ToolConfig: bedrockWeatherTool(),
	})
	if err != nil {
		t.Fatal(err)
	}
	stream := out.GetStream()
	defer stream.Close()
	var text, input, id, stop strings.Builder
	var read []string
	for ev := range stream.Events() {
		switch e := ev.(type) {
		case *types.ConverseStreamOutputMemberMessageStart:
			read = append(read, "messageStart")
		case *types.ConverseStreamOutputMemberContentBlockStart:
			read = append(read, "contentBlockStart")
			if u, ok := e.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
				id.WriteString(*u.Value.ToolUseId)
			}
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			read = append(read, "contentBlockDelta")
			switch d := e.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				text.WriteString(d.Value)
			case *types.ContentBlockDeltaMemberToolUse:
				input.WriteString(*d.Value.Input)
			}
		case *types.ConverseStreamOutputMemberContentBlockStop:
			read = append(read, "contentBlockStop")
		case *types.ConverseStreamOutputMemberMessageStop:
			read = append(read, "messageStop")
			stop.WriteString(string(e.Value.StopReason))
		case *types.ConverseStreamOutputMemberMetadata:
			read = append(read, "metadata")
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	checkBedrockReask(t, srv.got())
	if text.String() != "Let me check." || input.String() != `{"city":"Paris"}` || id.String() != "tooluse_good" || stop.String() != "tool_use" {
		t.Errorf("the client read text %q, toolUse %s %q, stop %q", text.String(), id.String(), input.String(), stop.String())
	}
	t.Logf("the client read: %s; text %q, toolUse %s input %s, stopReason %s", strings.Join(read, " "), text.String(), id.String(), input.String(), stop.String())
}

// The attack: without a signer, the re-ask never reaches the server with
// the client's stale signature; the program reads an API error
// signer_missing. And the server does verify: a signer with other
// credentials gets its re-ask refused with a 403.
func TestBedrockReaskNeverStale(t *testing.T) {
	t.Parallel()
	bad := converseJSON(bedrockAnswer("tooluse_bad", `{"city":42}`))
	for _, tc := range []struct {
		name     string
		mws      []httpguard.Middleware
		code     string
		received int
		verified int
	}{
		{"no signer", []httpguard.Middleware{httpguard.ToolArgValidation()}, "signer_missing", 1, 1},
		{"no signer, fail closed", []httpguard.Middleware{httpguard.ToolArgValidation(guard.WithFailClosed())}, "signer_missing", 1, 1},
		{"a signer with other credentials", []httpguard.Middleware{
			bedrockSigner(credentials.NewStaticCredentialsProvider("AKIDOTHER", "another-secret", "")), httpguard.ToolArgValidation(),
		}, "InvalidSignatureException", 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newBedrockServer(t, bad, bad)
			client := newBedrockClient(srv, httpguard.New(nil, tc.mws...))
			_, err := client.Converse(context.Background(), &bedrockruntime.ConverseInput{
				ModelId: aws.String(bedrockModel), Messages: weatherMessages(), ToolConfig: bedrockWeatherTool(),
			})
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != tc.code {
				t.Fatalf("Converse = %v, want an API error %s", err, tc.code)
			}
			got := srv.got()
			verified := 0
			for _, r := range got {
				if r.verified == nil {
					verified++
				}
			}
			if len(got) != tc.received || verified != tc.verified {
				t.Errorf("the server received %d requests, %d verified; want %d, %d", len(got), verified, tc.received, tc.verified)
			}
			t.Logf("the program read: %v", err)
		})
	}
}
