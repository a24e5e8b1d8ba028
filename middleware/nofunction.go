package middleware

import (
	"strconv"
	"strings"
)

// noFunctionCalls is the message that replaces n tool calls without a
// function in a replayed response ([ToolCallMessages]): they cannot be
// shown to the model as tool calls.
func noFunctionCalls(n int) string {
	return noFunctionCallsHead + strconv.Itoa(n) + noFunctionCallsTail
}

const (
	noFunctionCallsHead = "Your previous response contained "
	noFunctionCallsTail = " tool call(s) without a function name; they were not executed. " +
		"Call the tools again, each with its name and a JSON object of arguments."
)

// isNoFunctionCalls reports whether s is a [noFunctionCalls] message.
func isNoFunctionCalls(s string) bool {
	rest, ok := strings.CutPrefix(s, noFunctionCallsHead)
	if !ok {
		return false
	}
	n, ok := strings.CutSuffix(rest, noFunctionCallsTail)
	if !ok {
		return false
	}
	_, err := strconv.Atoi(n)
	return err == nil
}
