package main

import (
	"net/http"
	"net/url"
	"strings"
)

// provider names the upstream a request goes to.
type provider int

const (
	// defaultProvider is -upstream's: OpenAI's protocols (Chat
	// Completions, Responses, OpenAI-compatible servers) and every
	// request no other provider claims.
	defaultProvider provider = iota
	// anthropicProvider is -upstream-anthropic's: the Anthropic API.
	anthropicProvider
	// geminiProvider is -upstream-gemini's: the Gemini API.
	geminiProvider
)

// providerOf returns the provider whose upstream serves r. A path
// httpguard reads as one protocol's decides first, so that a request it
// guards goes where its protocol is spoken:
//
//   - …/chat/completions and …/responses: the default (OpenAI's);
//   - …/v1/messages and paths below it (count_tokens, batches): Anthropic;
//   - …/models/MODEL:METHOD (generateContent, streamGenerateContent,
//     countTokens, embedContent, …): Gemini.
//
// Any other path goes by the header that only that provider's SDKs send,
// so that their requests besides generation (the list of models, files)
// reach it too: anthropic-version (every Anthropic SDK, every request)
// for Anthropic; x-goog-api-key or a key query parameter (Google's SDKs
// and REST clients) for Gemini. Everything else is the default's.
func providerOf(r *http.Request) provider {
	path := r.URL.Path
	switch {
	case strings.HasSuffix(path, "/chat/completions"), strings.HasSuffix(path, "/responses"):
		return defaultProvider
	case strings.HasSuffix(path, "/v1/messages"), strings.Contains(path, "/v1/messages/"):
		return anthropicProvider
	case geminiMethodPath(path):
		return geminiProvider
	case r.Header.Get("Anthropic-Version") != "":
		return anthropicProvider
	case r.Header.Get(googleKeyHeader) != "" || hasQueryKey(r.URL):
		return geminiProvider
	}
	return defaultProvider
}

// geminiMethodPath reports whether path names a method of a Gemini model,
// …/models/MODEL:METHOD, as httpguard reads a path's error shape.
func geminiMethodPath(path string) bool {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return false
	}
	model, method, ok := strings.Cut(path[i+len("/models/"):], ":")
	return ok && model != "" && method != "" && !strings.Contains(model, "/")
}

// hasQueryKey reports whether u's query has a key parameter (Gemini's
// REST form of the API key), found as authenticate finds it.
func hasQueryKey(u *url.URL) bool {
	found := false
	eachQueryParam(u.RawQuery, func(name, _ string, err error) string {
		if err == nil && name == keyParam {
			found = true
		}
		return ""
	})
	return found
}

// upstreamFor returns the base URL r goes to and, with -auth-keys, the
// provider's key that upstream gets: the route of r's provider when its
// flag is given, else -upstream and -upstream-key-env's key. An MCP
// request (isMCP) goes to -upstream-mcp, else -upstream, whatever its
// path and headers.
func (s *server) upstreamFor(r *http.Request) (*url.URL, string) {
	var rt route
	if isMCP(r.Context()) {
		// An MCP server's requests are not a provider's, whatever
		// headers they carry.
		rt = s.cfg.mcpRoute
	} else {
		switch providerOf(r) {
		case anthropicProvider:
			rt = s.cfg.anthropic
		case geminiProvider:
			rt = s.cfg.gemini
		}
	}
	if rt.url == nil {
		return s.cfg.upstream, s.cfg.upstreamKey
	}
	return rt.url, rt.key
}
