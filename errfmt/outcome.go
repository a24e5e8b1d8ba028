package errfmt

// What the model reads of a call whose outcome the tool stage cannot give:
// the same words from every host (toolstage, and the agent restoring a
// turn it was cut off in).
const (
	// CallNotStarted is the result of a call whose run ended before it
	// started: it did not run.
	CallNotStarted = "The run stopped before this call started, so it did not run."
	// CallInterrupted is the result of a call that was running when its
	// run stopped, or whose tool panicked: whether it took effect is
	// unknown.
	CallInterrupted = "The run stopped while this call was running, so whether it took effect is unknown. Check before calling it again."
	// CallRejected is the result of a call a person rejected without a
	// message of their own.
	CallRejected = "A person reviewing this call rejected it; it did not run."
)
