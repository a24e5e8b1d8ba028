// Package agentcheckpoint holds the scenarios that drive toolguard's agent
// over a toolstage.Checkpointer: a run cut off between a tool batch and
// the next model call and finished by new Agent values
// ([ResumeAfterCrash]), and a stop, a panic, a cancel, a failed save or a
// lost reply in the middle of a paying turn ([RunFaults]). agent's tests
// run them on the in-memory store, guard/redisstore's on a real
// redis-server. They were exported by agent/checkpointtest; the public kit
// a store's author calls, toolstage/checkpointtest, holds the store's
// contract and the tool stage's use of it, and imports no langchaingo.
package agentcheckpoint
