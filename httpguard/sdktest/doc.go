// Package sdktest holds the tests that run httpguard's wire code and
// fakeprovider against the real SDK clients: openai-go, anthropic-sdk-go,
// google.golang.org/genai, sashabaranov/go-openai, langchaingo's clients,
// Ollama's github.com/ollama/ollama/api (against a loopback Ollama of
// its own: fakeprovider does not speak Ollama's native API) and
// aws-sdk-go-v2's Bedrock Runtime (against a loopback Bedrock that
// verifies every request's SigV4 signature). It is a module of its own so
// that those SDKs stay out of toolguard's go.mod; .ci/run runs it.
package sdktest
