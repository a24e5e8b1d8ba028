package middleware

import "strings"

// sameTool reports whether a tool call named called is a call of the tool
// named limited, as [WithToolName] matches names: as langchaingo's
// agents.Executor looks tools up, by strings.ToUpper of both. The Executor
// runs a call of "Search" with the tool "search", so a limit on "search"
// must count it; otherwise a model could pass the limit by changing case.
func sameTool(called, limited string) bool {
	return called == limited || strings.ToUpper(called) == strings.ToUpper(limited)
}
