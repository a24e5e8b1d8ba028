// Package sdktest holds the tests that run httpguard's wire code and
// fakeprovider against the real SDK clients: openai-go, anthropic-sdk-go,
// google.golang.org/genai, sashabaranov/go-openai and langchaingo's
// clients. It is a module of its own so that those SDKs stay out of
// toolguard's go.mod; .ci/run runs it.
package sdktest
