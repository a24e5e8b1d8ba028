package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// The provider keys of the routing tests, one per upstream, in the
// variables -upstream-key-env, -upstream-anthropic-key-env and
// -upstream-gemini-key-env name.
const (
	anthropicProviderKey = "sk-ant-PROVIDER-KEY-from-env"
	anthropicEnv         = "TEST_ANTHROPIC_KEY"
	geminiProviderKey    = "AIza-PROVIDER-KEY-from-env"
	geminiEnv            = "TEST_GEMINI_KEY"
)

// The request bodies of the routing tests: Anthropic's and Gemini's
// get_weather chats, sync and streamed.
const (
	anthropicTools  = `[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}]`
	anthropicBody   = `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + anthropicTools + `}`
	anthropicStream = `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + anthropicTools + `}`
	geminiTools     = `[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}},"required":["city"]}}]}]`
	geminiBody      = `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]}],"tools":` + geminiTools + `}`
)

// received lists what an upstream received, one line per request: the
// method, the path, the query and the credentials, as the closing note
// quotes them.
func received(up *fp.Server) []string {
	var out []string
	for _, r := range up.Requests() {
		line := r.Method + " " + r.Path
		if r.RawQuery != "" {
			line += "?" + r.RawQuery
		}
		for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
			if v := r.Header.Get(h); v != "" {
				line += fmt.Sprintf(" %s=%q", h, v)
			}
		}
		out = append(out, line)
	}
	return out
}

// streamText joins the text fragments of a stream's events, of any
// protocol ("text":"…", Chat's "content":"…"; unescaped, as the tests'
// texts need no escapes).
func streamText(body []byte) string {
	var b strings.Builder
	for _, m := range textFragment.FindAllSubmatch(body, -1) {
		b.Write(m[1])
	}
	return b.String()
}

var textFragment = regexp.MustCompile(`"(?:text|content)":"([^"\\]*)"`)

// With -upstream-anthropic and -upstream-gemini, each request goes to the
// upstream of its protocol, everything else to -upstream: an OpenAI, an
// Anthropic and a Gemini request, sync and streamed, each reach their own
// fake provider (and only it), guarded there (an invalid call re-asked
// of the same upstream); so do requests besides generation that carry
// only their SDK's header (the list of models). With -auth-keys each
// upstream gets its own provider's key in the place the client put its
// key; without, the client's key passes to whichever upstream serves it.
func TestRoutesPerProtocol(t *testing.T) {
	t.Parallel()
	for _, auth := range []bool{true, false} {
		name := "without -auth-keys"
		if auth {
			name = "with -auth-keys"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			openai := fp.New(fp.Reply(fp.Text("OpenAI here.")), fp.Reply(fp.Text("OpenAI streams.")))
			defer openai.Close()
			anthropic := fp.New(
				fp.Reply(fp.Call("get_weather", `{"city": 42}`)),
				fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`)),
				fp.Reply(fp.Text("Anthropic streams.")),
			)
			defer anthropic.Close()
			gemini := fp.New(fp.Reply(fp.Text("Gemini here.")), fp.Reply(fp.Text("Gemini streams.")))
			defer gemini.Close()

			args := []string{"-upstream-anthropic", anthropic.URL, "-upstream-gemini", gemini.URL}
			env := noEnv
			// The client's key, and what each upstream must receive.
			client, wantOpenAI, wantAnthropic, wantGemini := keyA, providerKey, anthropicProviderKey, geminiProviderKey
			if auth {
				args = append(args, "-auth-keys", writeKeys(t, keyFile), "-upstream-key-env", providerEnv,
					"-upstream-anthropic-key-env", anthropicEnv, "-upstream-gemini-key-env", geminiEnv)
				env = envOf(map[string]string{providerEnv: providerKey, anthropicEnv: anthropicProviderKey, geminiEnv: geminiProviderKey}, nil)
			} else {
				wantOpenAI, wantAnthropic, wantGemini = keyA, keyA, keyA
			}
			p := startProxyEnv(t, env, nil, openai.URL, args...)

			do := func(method, path, body string, header ...string) (int, []byte) {
				t.Helper()
				req, err := http.NewRequest(method, p.URL+path, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				for i := 0; i+1 < len(header); i += 2 {
					req.Header.Add(header[i], header[i+1])
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", method, path, err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, b
			}
			// expectOK checks that the client read want: in the body, or
			// as the text a stream's fragments make.
			expectOK := func(what string, status int, body []byte, want string) {
				t.Helper()
				text := streamText(body)
				t.Logf("%s: %d, text %q, %.120s", what, status, text, bytes.TrimSpace(body))
				if status != http.StatusOK || !bytes.Contains(body, []byte(want)) && text != want {
					t.Errorf("%s: %d %s; want 200 and %q", what, status, body, want)
				}
			}
			bearer := []string{"Authorization", "Bearer " + client}
			xAPIKey := []string{"x-api-key", client, "anthropic-version", "2023-06-01"}
			googKey := []string{"x-goog-api-key", client}

			status, body := do("POST", "/v1/chat/completions", chatBody, bearer...)
			expectOK("OpenAI chat", status, body, "OpenAI here.")
			status, body = do("POST", "/v1/chat/completions", streamBody, bearer...)
			expectOK("OpenAI chat stream", status, body, "OpenAI streams.")
			status, body = do("POST", "/v1/messages", anthropicBody, xAPIKey...)
			expectOK("Anthropic messages (re-asked)", status, body, `"input":{"city":"Paris"}`)
			status, body = do("POST", "/v1/messages", anthropicStream, xAPIKey...)
			expectOK("Anthropic messages stream", status, body, "Anthropic streams.")
			status, body = do("POST", "/v1beta/models/gemini-2.5-flash:generateContent", geminiBody, googKey...)
			expectOK("Gemini generateContent", status, body, "Gemini here.")
			status, body = do("POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key="+client, geminiBody)
			expectOK("Gemini streamGenerateContent ?key=", status, body, "Gemini streams.")
			// Besides generation: each list of models goes by its SDK's
			// header (the fake providers answer 404 to a path they do not
			// speak; where it went is what counts).
			do("GET", "/v1/models", "", bearer...)
			do("GET", "/v1/models", "", xAPIKey...)
			do("GET", "/v1beta/models", "", googKey...)
			do("POST", "/v1/messages/count_tokens", authProtocols[1].body, xAPIKey...)

			for _, u := range []struct {
				name string
				up   *fp.Server
				want []string
			}{
				{"-upstream (OpenAI)", openai, []string{
					`POST /v1/chat/completions Authorization="Bearer ` + wantOpenAI + `"`,
					`POST /v1/chat/completions Authorization="Bearer ` + wantOpenAI + `"`,
					`GET /v1/models Authorization="Bearer ` + wantOpenAI + `"`,
				}},
				{"-upstream-anthropic", anthropic, []string{
					`POST /v1/messages X-Api-Key="` + wantAnthropic + `"`,
					`POST /v1/messages X-Api-Key="` + wantAnthropic + `"`,
					`POST /v1/messages X-Api-Key="` + wantAnthropic + `"`,
					`GET /v1/models X-Api-Key="` + wantAnthropic + `"`,
					`POST /v1/messages/count_tokens X-Api-Key="` + wantAnthropic + `"`,
				}},
				{"-upstream-gemini", gemini, []string{
					`POST /v1beta/models/gemini-2.5-flash:generateContent X-Goog-Api-Key="` + wantGemini + `"`,
					`POST /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=` + wantGemini,
					`GET /v1beta/models X-Goog-Api-Key="` + wantGemini + `"`,
				}},
			} {
				got := received(u.up)
				t.Logf("%s received:\n\t%s", u.name, strings.Join(got, "\n\t"))
				if !slices.Equal(got, u.want) {
					t.Errorf("%s received:\n\t%s\nwant:\n\t%s", u.name, strings.Join(got, "\n\t"), strings.Join(u.want, "\n\t"))
				}
			}
		})
	}
}

// An upstream of its own keeps what the proxy does for -upstream: a
// request reaches it with its Host (not the proxy's), and one it cannot
// be reached for is answered 502 in its protocol's error shape, saying
// the kind of failure and never the address.
func TestRouteKeepsUpstreamBehaviour(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there: connection refused
	hosts := make(chan string, 1)
	gemini := fp.New(fp.Handle(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`)
	}))
	defer gemini.Close()
	openai := fp.New()
	defer openai.Close()
	p := startProxy(t, openai.URL, "-upstream-anthropic", closed, "-upstream-gemini", gemini.URL, "-model-retries", "0")

	resp, body := post(t, p.URL+"/v1/messages", anthropicBody, "x-api-key", keyA, "anthropic-version", "2023-06-01")
	t.Logf("Anthropic request, -upstream-anthropic refusing connections: %d %s", resp.StatusCode, bytes.TrimSpace(body))
	var e struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != http.StatusBadGateway || e.Type != "error" ||
		e.Error.Type != "upstream_unreachable" || !strings.HasSuffix(e.Error.Message, ": connection refused") {
		t.Errorf("status %d, body %s; want 502 in Anthropic's shape, upstream_unreachable, connection refused", resp.StatusCode, body)
	}
	if host := strings.TrimPrefix(closed, "http://"); bytes.Contains(body, []byte(host)) || bytes.Contains(body, []byte("127.0.0.1")) {
		t.Errorf("the 502 names the upstream's address: %s", body)
	}

	resp, body = post(t, p.URL+"/v1beta/models/gemini-2.5-flash:generateContent", geminiBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Gemini request: %d %s", resp.StatusCode, body)
	}
	wantHost := strings.TrimPrefix(gemini.URL, "http://")
	if got := <-hosts; got != wantHost {
		t.Errorf("-upstream-gemini received Host %q, want its own %q", got, wantHost)
	}
	if n := len(openai.Requests()); n != 0 {
		t.Errorf("-upstream received %d requests, want none", n)
	}
}

// A bad upstream URL or key variable of a route stops the proxy before it
// starts, with one line naming the flag (or its variable); so do a
// route's -key-env without its upstream or without -auth-keys, and
// -auth-keys with a route whose key variable is not given: its upstream
// would otherwise get another provider's key.
func TestBadRouteFlags(t *testing.T) {
	t.Parallel()
	keys := writeKeys(t, keyFile)
	auth := []string{"-auth-keys", keys, "-upstream-key-env", providerEnv}
	withEnv := map[string]string{providerEnv: providerKey, anthropicEnv: anthropicProviderKey, "EMPTY": ""}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"anthropic not a URL", []string{"-upstream-anthropic", "api.anthropic.com"}, nil,
			`-upstream-anthropic "api.anthropic.com": want an http or https URL with a host and no query`},
		{"gemini with a query", []string{"-upstream-gemini", "https://generativelanguage.googleapis.com?key=AIza"}, nil,
			`-upstream-gemini "https://generativelanguage.googleapis.com?key=AIza": want an http or https URL`},
		{"gemini from the environment", nil, map[string]string{"TOOLGUARD_UPSTREAM_GEMINI": "ftp://x"}, `TOOLGUARD_UPSTREAM_GEMINI "ftp://x": want an http or https URL`},
		{"key env without its upstream", append([]string{"-upstream-anthropic-key-env", anthropicEnv}, auth...), withEnv,
			"-upstream-anthropic-key-env needs -upstream-anthropic: it names the key of that upstream"},
		{"key env without -auth-keys", []string{"-upstream-gemini", "https://g.example", "-upstream-gemini-key-env", geminiEnv}, nil,
			"-upstream-gemini-key-env needs -auth-keys"},
		{"-auth-keys, route without key env", append([]string{"-upstream-anthropic", "https://a.example"}, auth...), withEnv,
			"-upstream-anthropic needs -upstream-anthropic-key-env with -auth-keys"},
		{"route key variable unset", append([]string{"-upstream-gemini", "https://g.example", "-upstream-gemini-key-env", geminiEnv}, auth...), withEnv,
			"-upstream-gemini-key-env " + geminiEnv + ": the variable is not set"},
		{"route key variable empty", append([]string{"-upstream-anthropic", "https://a.example", "-upstream-anthropic-key-env", "EMPTY"}, auth...), withEnv,
			"-upstream-anthropic-key-env EMPTY: the variable is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a proxy that starts in spite of the flags stops at once
			args := append([]string{"-upstream", "https://api.openai.com", "-listen", "127.0.0.1:0"}, tc.args...)
			err := run(ctx, args, envOf(tc.env, nil), &stdout, &stderr)
			first, _, _ := strings.Cut(stderr.String(), "\n")
			t.Logf("%s", first)
			if !errors.Is(err, errUsage) || !strings.HasPrefix(first, "toolguard-proxy: "+tc.want) {
				t.Errorf("run(%q) = %v, first line %q; want errUsage and a line beginning %q", args, err, first, "toolguard-proxy: "+tc.want)
			}
			for _, k := range []string{providerKey, anthropicProviderKey, keyA, keyB} {
				if strings.Contains(stderr.String(), k) {
					t.Errorf("the error quotes the key %q", k)
				}
			}
		})
	}
}
