// Package sdktest proves the tool stage (package toolstage) with the real
// SDK clients, each program running its own loop through httpguard: the
// SDK's own types and message list, the tools offered from
// Stage.Definitions, each response's calls handed to Stage.Run, and the
// outcomes appended as the SDK's tool messages. Against a loopback
// fakeprovider it shows, for each client: a bad call re-asked inside one
// SDK call and only the corrected one run; an injected user_id the model
// neither sees nor sets; an approval paused in one Stage value and resumed
// by another sharing a real redis-server, a replayed or tampered interrupt
// refused; ToolRetry repeating an idempotent tool only.
//
// It holds only tests, is imported by nothing, and is a module of its own
// so that the SDKs stay out of toolguard's go.mod; .ci/run runs it. The
// tests that need redis-server skip without one on the PATH, and fail
// under TOOLGUARD_REQUIRE_REDIS=1.
package sdktest
