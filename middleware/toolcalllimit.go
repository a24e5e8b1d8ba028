package middleware

// limitConfig holds ToolCallLimit's options.
type limitConfig struct {
	events eventOption
}
