package validation

// Bounds on model-supplied text kept in violations, in bytes.
const (
	maxGot     = 256 // Violation.Got
	maxPath    = 200 // a quoted path or name
	maxMessage = 300 // a message that may echo a Validate hook's error
)
