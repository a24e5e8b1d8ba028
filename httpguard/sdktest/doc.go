// Package sdktest holds the tests that run httpguard's wire code and
// fakeprovider against the real SDK clients: openai-go, anthropic-sdk-go,
// google.golang.org/genai, sashabaranov/go-openai, langchaingo's clients
// and Ollama's github.com/ollama/ollama/api (against a loopback Ollama of
// its own: fakeprovider does not speak Ollama's native API). It is a
// module of its own so that those SDKs stay out of toolguard's go.mod;
// .ci/run runs it.
package sdktest
