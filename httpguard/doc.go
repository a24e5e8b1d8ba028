// Package httpguard guards LLM tool calls at the wire: an http.RoundTripper
// for any Go client that takes an *http.Client (openai-go,
// anthropic-sdk-go, google.golang.org/genai, go-openai, langchaingo's
// clients, …), speaking OpenAI Chat Completions, OpenAI Responses,
// Anthropic Messages and Gemini generateContent, sync and streaming.
//
// This file set is the protocol groundwork the transport is built on: per
// protocol (chat.go, responses.go, messages.go, gemini.go) recognising a
// request and reading its tools and schemas, listing a response's tool
// calls, writing cleaned arguments back, building the re-ask from the
// original request, the protocol's error body and usage; and per protocol
// a stream assembler and gate (sse.go describes the streaming design).
// Bodies are bounded by MaxBody (8 MiB).
package httpguard
