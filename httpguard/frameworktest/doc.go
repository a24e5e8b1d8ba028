// Package frameworktest holds the tests that run agent frameworks through
// httpguard against fakeprovider on loopback: an Eino ReAct agent on
// Eino's OpenAI chat model, and Genkit's Generate with a tool on its
// OpenAI-compatible plugin. It is a module of its own, apart from
// httpguard/sdktest, because Genkit's dotprompt needs
// github.com/invopop/jsonschema v0.13 while anthropic-sdk-go v2 (in
// sdktest) needs v0.14, whose ordered map is another module's; and so that
// the frameworks stay out of toolguard's go.mod. .ci/run runs it.
//
// go.mod requires github.com/bytedance/sonic v1.15.5, newer than Eino's
// own requirement (v1.14.1, which does not build with Go 1.26: its
// internal/rt lacks GoMapIterator there).
package frameworktest
