package guard

import "strings"

// sameTool reports whether a tool call named called is a call of the tool
// named limited, as [WithToolName] matches names: as langchaingo's
// agents.Executor looks tools up, by strings.ToUpper of both. The Executor
// runs a call of "Search" with the tool "search", so a limit on "search"
// must count it; otherwise a model could pass the limit by changing case.
// strings.EqualFold would not agree: the Executor runs "fınd" (dotless ı)
// as "find", which EqualFold tells apart.
func sameTool(called, limited string) bool {
	//lint:ignore SA6005 the Executor's rule is ToUpper equality, which EqualFold is not (see above)
	return called == limited || strings.ToUpper(called) == strings.ToUpper(limited)
}
