// Package sdktest proves the tool stage (package toolstage) with the real
// SDK clients, each test a program that runs its own loop through
// httpguard: its SDK's own types and message list, the tools offered from
// [toolstage.Stage.Definitions], the model called with the context
// [toolstage.Stage.Scope] returns, each response's calls handed to
// [toolstage.Stage.Run] as []guard.Call and the outcomes appended as the
// SDK's tool-result messages. Against a loopback provider
// (httpguard/fakeprovider) they show, per SDK: a bad call re-asked by
// httpguard inside one SDK call (sync and streamed), only the corrected
// call run, and not checked a second time by the stage; an injected
// user_id the provider never sees and a model cannot set; a batch paused
// for approval in one Stage value and resumed in another sharing a Redis
// Checkpointer (a real redis-server), every call's outcome in call order,
// a replayed or tampered interrupt refused with nothing run, and two
// resumes at once running the calls once; ToolRetry repeating an
// idempotent tool only.
//
// It holds only tests and is imported by nothing: a module of its own so
// that the SDKs stay out of toolguard's go.mod; .ci/run runs it. The Redis
// tests skip without redis-server on the PATH unless
// TOOLGUARD_REQUIRE_REDIS=1, which makes that a failure.
package sdktest
