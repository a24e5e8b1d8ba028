package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	fp "github.com/toolguard/toolguard/httpguard/fakeprovider"
)

// The keys of the auth tests: two tenants' client keys, a key of no
// tenant, and the provider's key the proxy sends upstream instead.
const (
	keyA        = "tg-tenant-A-key-0001"
	keyB        = "tg-tenant-B-key-0002"
	keyWrong    = "tg-nobodys-key-0003"
	providerKey = "sk-PROVIDER-KEY-from-env"
	providerEnv = "TEST_PROVIDER_KEY"
)

// keyFile is a key file of tenants A and B.
const keyFile = "# tenants of the tests\n" + keyA + " A\n\n" + keyB + " B # a comment\n"

// writeKeys writes content to a key file of the test's own and returns
// its path.
func writeKeys(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startAuthProxy starts a proxy with -auth-keys keyFile and the provider's
// key in providerEnv.
func startAuthProxy(t *testing.T, upstream string, args ...string) *proxy {
	t.Helper()
	env := envOf(map[string]string{providerEnv: providerKey}, nil)
	args = append([]string{"-auth-keys", writeKeys(t, keyFile), "-upstream-key-env", providerEnv}, args...)
	return startProxyEnv(t, env, nil, upstream, args...)
}

// The requests of one protocol the auth tests send, and how each reads
// the error type of its protocol's error shape.
var authProtocols = []struct {
	name, path, body string
	errType          func([]byte) string
}{
	{"openai", "/v1/chat/completions", chatBody, openAIType},
	{"anthropic", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"Hi"}]}`, anthropicType},
	{"gemini", "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`, geminiAuthStatus},
}

func geminiAuthStatus(b []byte) string {
	var e struct {
		Error struct {
			Code   int
			Status string
		}
	}
	_ = json.Unmarshal(b, &e)
	if e.Error.Code != http.StatusUnauthorized {
		return ""
	}
	return e.Error.Status
}

// A request without a key of -auth-keys is answered 401 in its protocol's
// error shape, and nothing reaches the upstream: no key, a wrong key in
// each place an SDK puts one, a key in a form the proxy does not read,
// a good key beside a wrong one, keys of two tenants.
func TestAuthRefusesWithoutAValidKey(t *testing.T) {
	t.Parallel()
	up := fp.New()
	defer up.Close()
	p := startAuthProxy(t, up.URL)
	for _, proto := range authProtocols {
		for _, tc := range []struct {
			name   string
			query  string
			header []string
		}{
			{"no key", "", nil},
			{"wrong bearer", "", []string{"Authorization", "Bearer " + keyWrong}},
			{"wrong x-api-key", "", []string{"x-api-key", keyWrong}},
			{"wrong x-goog-api-key", "", []string{"x-goog-api-key", keyWrong}},
			{"wrong ?key=", "?key=" + keyWrong, nil},
			{"empty bearer", "", []string{"Authorization", "Bearer "}},
			{"basic", "", []string{"Authorization", "Basic " + keyA}},
			{"bare key in Authorization", "", []string{"Authorization", keyA}},
			{"x-api-key twice", "", []string{"x-api-key", keyA, "x-api-key", keyA}},
			{"good bearer, wrong x-api-key", "", []string{"Authorization", "Bearer " + keyA, "x-api-key", keyWrong}},
			{"good header, wrong ?key=", "?key=" + keyWrong, []string{"x-goog-api-key", keyA}},
			{"good key, wrong ;key=", "?alt=json;key=" + keyWrong, []string{"x-goog-api-key", keyA}},
			{"keys of two tenants", "", []string{"Authorization", "Bearer " + keyA, "x-api-key", keyB}},
		} {
			t.Run(proto.name+"/"+tc.name, func(t *testing.T) {
				resp, body := post(t, p.URL+proto.path+tc.query, proto.body, tc.header...)
				if tc.name == "no key" || tc.name == "wrong bearer" {
					t.Logf("%d %s", resp.StatusCode, bytes.TrimSpace(body))
				}
				want := "authentication_error"
				if proto.name == "gemini" {
					want = "UNAUTHENTICATED"
				}
				if resp.StatusCode != http.StatusUnauthorized || proto.errType(body) != want {
					t.Errorf("status %d, body %s; want 401 and %s in %s's error shape", resp.StatusCode, body, want, proto.name)
				}
				for _, k := range []string{keyA, keyB, keyWrong} {
					if bytes.Contains(body, []byte(k)) {
						t.Errorf("the 401's body quotes a key: %s", body)
					}
				}
			})
		}
	}
	n := len(up.Requests())
	t.Logf("the upstream received %d requests", n)
	if n != 0 {
		t.Errorf("the upstream received %d requests, want none", n)
	}
	logs := p.logs.String()
	for _, k := range []string{keyA, keyB, keyWrong} {
		if strings.Contains(logs, k) {
			t.Errorf("the logs hold the key %q:\n%s", k, logs)
		}
	}
	if !strings.Contains(logs, `"key_hash":["`+keyHash(keyWrong)+`"]`) {
		t.Errorf("no refusal is logged with the wrong key's hash %s:\n%s", keyHash(keyWrong), logs)
	}
}

// A request with tenant A's or B's key, in the place its SDK puts it, is
// served; the upstream receives the provider's key (-upstream-key-env) in
// that same place and never the client's key, anywhere.
func TestAuthSendsTheProviderKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path, query, body string
		header                  func(key string) []string
		// where the upstream must find the provider's key
		wantHeader, wantValue, wantQuery string
	}{
		{"openai bearer", "/v1/chat/completions", "", chatBody,
			func(k string) []string { return []string{"Authorization", "Bearer " + k} }, "Authorization", "Bearer " + providerKey, ""},
		{"anthropic x-api-key", "/v1/messages", "", authProtocols[1].body,
			func(k string) []string { return []string{"x-api-key", k, "anthropic-version", "2023-06-01"} }, "X-Api-Key", providerKey, ""},
		{"gemini x-goog-api-key", "/v1beta/models/gemini-2.5-flash:generateContent", "", authProtocols[2].body,
			func(k string) []string { return []string{"x-goog-api-key", k} }, "X-Goog-Api-Key", providerKey, ""},
		{"gemini ?key=", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", "?alt=sse&key=", authProtocols[2].body,
			func(string) []string { return nil }, "", "", "alt=sse&key=" + providerKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := fp.New(fp.Reply(fp.Text("Hello A.")), fp.Reply(fp.Text("Hello B.")))
			defer up.Close()
			p := startAuthProxy(t, up.URL)
			for _, key := range []string{keyA, keyB} {
				url := p.URL + tc.path + tc.query
				if tc.query != "" {
					url += key
				}
				resp, body := post(t, url, tc.body, tc.header(key)...)
				t.Logf("client with key %s: %d %s", key, resp.StatusCode, bytes.TrimSpace(body))
				if resp.StatusCode != http.StatusOK {
					t.Errorf("key %s: status %d: %s", key, resp.StatusCode, body)
				}
			}
			reqs := up.Requests()
			if len(reqs) != 2 {
				t.Fatalf("the upstream received %d requests, want 2", len(reqs))
			}
			for i, r := range reqs {
				t.Logf("upstream request %d: Authorization %q, x-api-key %q, x-goog-api-key %q, query %q",
					i+1, r.Header.Get("Authorization"), r.Header.Get("x-api-key"), r.Header.Get("x-goog-api-key"), r.RawQuery)
				if tc.wantHeader != "" && r.Header.Get(tc.wantHeader) != tc.wantValue {
					t.Errorf("upstream request %d: %s %q, want %q", i+1, tc.wantHeader, r.Header.Get(tc.wantHeader), tc.wantValue)
				}
				if tc.wantQuery != "" && r.RawQuery != tc.wantQuery {
					t.Errorf("upstream request %d: query %q, want %q", i+1, r.RawQuery, tc.wantQuery)
				}
				for _, k := range []string{keyA, keyB} {
					for name, vs := range r.Header {
						if slices.ContainsFunc(vs, func(v string) bool { return strings.Contains(v, k) }) {
							t.Errorf("upstream request %d: header %s holds the client's key", i+1, name)
						}
					}
					if strings.Contains(r.RawQuery, k) {
						t.Errorf("upstream request %d: the query holds the client's key", i+1)
					}
				}
			}
			// The access log names each tenant, and holds no key.
			lines := p.waitLog(t, "toolguard-proxy: request", 2)
			var tenants []string
			for _, l := range lines {
				tenants = append(tenants, l["tenant"].(string))
			}
			if !slices.Equal(tenants, []string{"A", "B"}) {
				t.Errorf("the access log names the tenants %q, want A and B", tenants)
			}
			for _, k := range []string{keyA, keyB, providerKey} {
				if strings.Contains(p.logs.String(), k) {
					t.Errorf("the logs hold the key %q", k)
				}
			}
		})
	}
}

// Thread limits count per tenant: with -thread-limit 1, tenant A's thread
// t1 and tenant B's thread t1 each get one call, and a second call of
// either is blocked. A thread id chosen to look like another tenant's
// prefixed id is a thread of its own too.
func TestAuthThreadsPerTenant(t *testing.T) {
	t.Parallel()
	steps := make([]fp.Step, 6)
	for i := range steps {
		steps[i] = fp.Reply(fp.Call("get_weather", `{"city": "Paris"}`))
	}
	up := fp.New(steps...)
	defer up.Close()
	p := startAuthProxy(t, up.URL, "-thread-limit", "1", "-limit-exit", "end")
	call := func(key, thread string) string {
		resp, body := post(t, p.URL+"/v1/chat/completions", chatBody, "Authorization", "Bearer "+key, threadHeader, thread)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("key %s thread %s: status %d: %s", key, thread, resp.StatusCode, body)
		}
		m := decodeChat(t, body).Choices[0].Message
		switch {
		case len(m.ToolCalls) == 1:
			return "call"
		case m.Content != nil && strings.Contains(*m.Content, "limit"):
			return "blocked"
		}
		t.Fatalf("neither a call nor a limit: %s", body)
		return ""
	}
	var got []string
	for _, c := range []struct{ tenant, key, thread string }{
		{"A", keyA, "t1"}, {"B", keyB, "t1"}, {"A", keyA, "t1"}, {"B", keyB, "t1"},
		// B's thread named as the guard names A's t1: B's own.
		{"B", keyB, tenantThread("A", "t1")},
	} {
		r := call(c.key, c.thread)
		t.Logf("tenant %s, thread %q: %s", c.tenant, c.thread, r)
		got = append(got, r)
	}
	if want := []string{"call", "call", "blocked", "blocked", "call"}; !slices.Equal(got, want) {
		t.Errorf("tenant A t1, B t1, A t1, B t1, B %q: %q, want %q", tenantThread("A", "t1"), got, want)
	}
}

// tenantThread gives distinct ids to distinct tenant and thread pairs,
// even when a thread id holds the separator.
func TestTenantThreadDistinct(t *testing.T) {
	t.Parallel()
	pairs := [][2]string{{"a", "b:c"}, {"a:b", "c"}, {"a", "1:a:b"}, {"ab", "c"}, {"a", "bc"}, {"1", ":1:x"}, {"1:1", "x"}}
	seen := map[string][2]string{}
	for _, p := range pairs {
		id := tenantThread(p[0], p[1])
		if q, ok := seen[id]; ok {
			t.Errorf("tenantThread(%q, %q) = tenantThread(%q, %q) = %q", p[0], p[1], q[0], q[1], id)
		}
		seen[id] = p
	}
}

// The metrics label each request with its tenant; past maxTenantLabels
// tenants the rest share otherTenant.
func TestAuthTenantLabel(t *testing.T) {
	t.Parallel()
	up := fp.New(fp.Reply(fp.Text("Hi.")), fp.Reply(fp.Text("Hi.")))
	defer up.Close()
	p := startAuthProxy(t, up.URL, "-admin-listen", "127.0.0.1:0")
	post(t, p.URL+"/v1/chat/completions", chatBody, "Authorization", "Bearer "+keyA)
	post(t, p.URL+"/v1/chat/completions", chatBody, "Authorization", "Bearer "+keyWrong)
	p.waitLog(t, "toolguard-proxy: request", 2)
	metrics := scrape(t, p.Admin+"/metrics")
	for _, want := range []string{
		`http_server_request_duration_seconds_count{http_request_method="POST",http_response_status_code="200",` + scope + `,toolguard_tenant="A"} 1`,
		`http_server_request_duration_seconds_count{http_request_method="POST",http_response_status_code="401",` + scope + `} 1`,
	} {
		if !slices.Contains(metrics, want) {
			t.Errorf("/metrics has no line\n%s\nin\n%s", want, strings.Join(metrics, "\n"))
		}
	}

	var l tenantLabels
	for i := range maxTenantLabels {
		if got := l.label("t" + strconv.Itoa(i)); got != "t"+strconv.Itoa(i) {
			t.Fatalf("label of tenant %d = %q, want its name", i, got)
		}
	}
	if got := l.label("one-more"); got != otherTenant {
		t.Errorf("label of tenant %d = %q, want %q", maxTenantLabels+1, got, otherTenant)
	}
	if got := l.label("t0"); got != "t0" {
		t.Errorf("label of a tenant seen before = %q, want t0", got)
	}
}

// A bad key file or a missing provider key stops the proxy before it
// starts, with one line naming the flag (and the line of the file),
// never a key.
func TestBadAuthFlags(t *testing.T) {
	t.Parallel()
	good := writeKeys(t, keyFile)
	keys := func(content string) []string {
		return []string{"-auth-keys", writeKeys(t, content), "-upstream-key-env", providerEnv}
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"one field", keys(keyFile + "tg-lonely-key-0000004\n"), nil, ": line 5: want KEY TENANT, found 1 fields"},
		{"three fields", keys(keyA + " A extra\n"), nil, ": line 1: want KEY TENANT, found 3 fields"},
		{"short key", keys("# x\nshort-key-005 A\n"), nil, ": line 2: the key is 13 bytes long, want 16 to 512"},
		{"bad tenant", keys(keyA + " A/B\n"), nil, `: line 1: the tenant "A/B" has a character other than`},
		{"key twice", keys(keyA + " A\n" + keyB + " B\n" + keyA + " C\n"), nil, ": line 3: the key of line 1 again"},
		{"no keys", keys("# none yet\n\n"), nil, ": no keys"},
		{"missing file", []string{"-auth-keys", filepath.Join(t.TempDir(), "nope"), "-upstream-key-env", providerEnv}, nil, ": no such file or directory"},
		{"no -upstream-key-env", []string{"-auth-keys", good}, nil, "-auth-keys needs -upstream-key-env"},
		{"-upstream-key-env alone", []string{"-upstream-key-env", providerEnv}, nil, "-upstream-key-env needs -auth-keys"},
		{"variable unset", []string{"-auth-keys", good, "-upstream-key-env", "TEST_UNSET"}, nil, "-upstream-key-env TEST_UNSET: the variable is not set"},
		{"variable empty", []string{"-auth-keys", good, "-upstream-key-env", providerEnv}, map[string]string{providerEnv: ""}, "-upstream-key-env " + providerEnv + ": the variable is empty"},
		{"variable with a newline", []string{"-auth-keys", good, "-upstream-key-env", providerEnv}, map[string]string{providerEnv: "sk-x\r\nX-Evil: 1"}, "a character a header cannot carry"},
		{"from the environment", nil, map[string]string{"TOOLGUARD_AUTH_KEYS": writeKeys(t, "x "+keyA+" A\n"), "TOOLGUARD_UPSTREAM_KEY_ENV": providerEnv}, "TOOLGUARD_AUTH_KEYS "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"TOOLGUARD_UPSTREAM": "https://x", "TOOLGUARD_LISTEN": "127.0.0.1:0", providerEnv: providerKey}
			for k, v := range tc.env {
				vars[k] = v
			}
			// Done already: a proxy that starts in spite of the flags
			// stops at once, and the test fails rather than hangs.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var stdout, stderr bytes.Buffer
			err := run(ctx, tc.args, envOf(vars, nil), &stdout, &stderr)
			first, _, _ := strings.Cut(stderr.String(), "\n")
			if !errors.Is(err, errUsage) || !strings.HasPrefix(first, "toolguard-proxy: ") || !strings.Contains(first, tc.want) {
				t.Errorf("run(%q) = %v, first line %q; want errUsage and %q", tc.args, err, first, tc.want)
			}
			for _, k := range []string{keyA, keyB, providerKey, "tg-lonely-key-0000004", "short-key-005"} {
				if strings.Contains(stderr.String(), k) {
					t.Errorf("the error quotes a key: %q", first)
				}
			}
			t.Logf("%s", first)
		})
	}
}

// Reloading the key file (what SIGHUP does) puts the new keys in force at
// once: a removed key is refused, an added one served. A new file that is
// malformed or gone changes nothing, and the log says which line.
func TestReloadKeys(t *testing.T) {
	t.Parallel()
	up := fp.New(fp.Reply(fp.Text("1")), fp.Reply(fp.Text("2")), fp.Reply(fp.Text("3")), fp.Reply(fp.Text("4")))
	defer up.Close()
	path := writeKeys(t, keyFile)
	env := envOf(map[string]string{providerEnv: providerKey}, nil)
	p := startProxyEnv(t, env, nil, up.URL, "-auth-keys", path, "-upstream-key-env", providerEnv)
	status := func(key string) int {
		resp, _ := post(t, p.URL+"/v1/chat/completions", chatBody, "Authorization", "Bearer "+key)
		return resp.StatusCode
	}
	const keyC = "tg-tenant-C-key-0004"
	if a, c := status(keyA), status(keyC); a != 200 || c != 401 {
		t.Fatalf("before the reload: A %d, C %d; want 200 and 401", a, c)
	}
	if err := os.WriteFile(path, []byte(keyB+" B\n"+keyC+" C\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.srv.reloadKeys()
	if a, b, c := status(keyA), status(keyB), status(keyC); a != 401 || b != 200 || c != 200 {
		t.Errorf("after the reload: A %d, B %d, C %d; want 401, 200, 200", a, b, c)
	}
	if lines := p.logLines(t, "toolguard-proxy: the key file was reloaded"); len(lines) != 1 || lines[0]["keys"] != 2.0 || lines[0]["tenants"] != 2.0 {
		t.Errorf("reload logged %v, want one line with 2 keys of 2 tenants", lines)
	}

	if err := os.WriteFile(path, []byte(keyA+" A\n"+keyC+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.srv.reloadKeys()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	p.srv.reloadKeys()
	if a, c := status(keyA), status(keyC); a != 401 || c != 200 {
		t.Errorf("after a malformed and a missing file: A %d, C %d; want the keys before: 401, 200", a, c)
	}
	lines := p.logLines(t, "toolguard-proxy: the key file was not reloaded: the keys loaded before stay")
	if len(lines) != 2 || lines[0]["error"] != "line 2: want KEY TENANT, found 1 fields" || lines[1]["error"] != "no such file or directory" {
		t.Errorf("refused reloads logged %v; want line 2's reason, then the missing file", lines)
	}
	if strings.Contains(p.logs.String(), keyC) {
		t.Error("the logs hold a key")
	}
}

// The access log line of a request names the thread its client named
// (X-Toolguard-Thread), as the client wrote it: without -auth-keys, and
// with it beside the tenant, not the tenant's thread id the guard counts.
func TestAccessLogNamesTheThread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, upstream string) *proxy
	}{
		{"without -auth-keys", func(t *testing.T, upstream string) *proxy { return startProxy(t, upstream, "-thread-limit", "5") }},
		{"with -auth-keys", func(t *testing.T, upstream string) *proxy { return startAuthProxy(t, upstream, "-thread-limit", "5") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := fp.New(fp.Reply(fp.Text("1")))
			defer up.Close()
			p := tc.start(t, up.URL)
			post(t, p.URL+"/v1/chat/completions", chatBody, "Authorization", "Bearer "+keyA, threadHeader, "chat-7")
			lines := p.waitLog(t, "toolguard-proxy: request", 1)
			if len(lines) != 1 || lines[0]["thread"] != "chat-7" {
				t.Errorf("access log %v; want thread chat-7", lines)
			}
		})
	}
}

// With -auth-keys and without -admin-listen, /metrics on the traffic port
// (which names the tenants) needs a key like any request, while /healthz
// and /readyz stay open to probes; on -admin-listen's port it needs none.
func TestAuthMetricsNeedAKey(t *testing.T) {
	t.Parallel()
	up := fp.New()
	defer up.Close()
	p := startAuthProxy(t, up.URL)
	if code, body := get(t, p.URL+"/metrics"); code != http.StatusUnauthorized || strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics without a key: %d, want 401 and no metrics", code)
	}
	resp, body := getWith(t, p.URL+"/metrics", "Authorization", "Bearer "+keyB)
	if resp != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics with a key: %d, want 200 and the exposition", resp)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, p.URL+path); code != 200 || body != "ok\n" {
			t.Errorf("%s without a key: %d %q, want 200 ok", path, code, body)
		}
	}
	admin := startAuthProxy(t, up.URL, "-admin-listen", "127.0.0.1:0")
	if code, body := get(t, admin.Admin+"/metrics"); code != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("-admin-listen's /metrics without a key: %d, want 200 and the exposition", code)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("the upstream received %d requests, want none", n)
	}
}
