package middleware_test

// notExecuted is what a valid sibling of an invalid call reads, pinned (the
// rest of the model stage's wording is pinned in package guard's tests).
const notExecuted = "Not executed because other tool calls in this batch had invalid arguments; re-issue all tool calls with corrected arguments."
