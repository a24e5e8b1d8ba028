package eval

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/middleware/fakemodel"
)

// SelfCorrecting returns a Step that plays a model which corrects its own
// tool call only as far as the feedback it was sent tells it to. It measures
// feedback: a message that names every error costs one re-ask, a message
// that names one error per round costs one re-ask per error, and a message
// that names none fixes nothing.
//
// When the request holds no tool message for a call of tool, the step
// answers with one call of tool whose arguments are first. Otherwise it reads
// the last such tool message (the feedback) and the arguments of the call it
// answers (as replayed to the model, so empty values a middleware already
// stripped stay stripped) and answers with Correct(truth, those arguments,
// feedback).
//
// The step keeps no state of its own, so one Step may be repeated to script
// as many turns as a middleware may take:
//
//	step := eval.SelfCorrecting("get_weather", `{"city":"Paris"}`, `{"city":75001}`)
//	m := fakemodel.New(step, step, step)
func SelfCorrecting(tool, truth, first string) fakemodel.Step {
	return fakemodel.Func(func(_ context.Context, msgs []llms.MessageContent, _ llms.CallOptions) (*llms.ContentResponse, error) {
		args := first
		if prev, feedback, ok := lastFeedback(msgs, tool); ok {
			args = Correct(truth, prev, feedback)
		}
		call := llms.ToolCall{ID: "call_" + strconv.Itoa(len(msgs)), Type: "function",
			FunctionCall: &llms.FunctionCall{Name: tool, Arguments: args}}
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{StopReason: "tool_calls", ToolCalls: []llms.ToolCall{call}}}}, nil
	})
}

// lastFeedback finds the last tool message answering a call of tool and the
// arguments of that call.
func lastFeedback(msgs []llms.MessageContent, tool string) (args, feedback string, ok bool) {
	var id string
	for i := len(msgs) - 1; i >= 0 && !ok; i-- {
		if msgs[i].Role != llms.ChatMessageTypeTool {
			continue
		}
		for j := len(msgs[i].Parts) - 1; j >= 0; j-- {
			if r, isResp := msgs[i].Parts[j].(llms.ToolCallResponse); isResp && r.Name == tool {
				id, feedback, ok = r.ToolCallID, r.Content, true
				break
			}
		}
	}
	if !ok {
		return "", "", false
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, p := range msgs[i].Parts {
			if tc, isCall := p.(llms.ToolCall); isCall && tc.ID == id && tc.FunctionCall != nil {
				return tc.FunctionCall.Arguments, feedback, true
			}
		}
	}
	return "", feedback, true
}

// Correct returns the arguments a literal-minded model sends after reading
// feedback about its previous arguments prev, given the arguments truth it
// meant to send. The rule is strict, so that an evaluation built on it
// cannot flatter the feedback:
//
//   - When prev is a JSON object, the model sees exactly the JSON Pointers
//     written in feedback (see FeedbackPaths). For each one, deepest last, it
//     sets the value of truth at that path, or removes the key when truth
//     has none there. A path whose parent does not exist in prev is ignored.
//     Everything the feedback does not point at stays as it was, and a
//     pointer to the root ("" or "(root)") changes nothing.
//   - When prev is not a JSON object (not JSON, a JSON string holding an
//     object, an array, ...), the model sends truth only if the feedback
//     says the arguments are "not valid JSON", "invalid JSON" or "not a JSON
//     object" and says why: the phrase is followed by ": reason" or " but
//     what they are" on the same line. Otherwise it sends prev again.
//
// truth must be a JSON object; the result is compact JSON with sorted keys,
// or prev or truth unchanged.
func Correct(truth, prev, feedback string) string {
	// A replayed call whose arguments were not a JSON object shows {}
	// (middleware.ToolCallMessages: langchaingo's Anthropic and Google
	// providers accept nothing else), so {} stands for arguments that may
	// not have been JSON; the feedback decides.
	cur, err := decodeObject(prev)
	placeholder := err == nil && len(cur) == 0 && strings.TrimSpace(prev) == "{}"
	if (err != nil || placeholder) && ExplainsNotJSON(feedback) {
		return truth
	}
	if err != nil {
		return prev
	}
	want, err := decodeObject(truth)
	if err != nil {
		return prev
	}
	paths := FeedbackPaths(feedback)
	slices.SortStableFunc(paths, func(a, b string) int {
		return strings.Count(a, "/") - strings.Count(b, "/")
	})
	for _, p := range paths {
		if p == "" {
			continue
		}
		toks := jsonptr.Tokens(p)
		parent, ok := jsonptr.GetTokens(cur, toks[:len(toks)-1])
		if !ok {
			continue
		}
		last := toks[len(toks)-1]
		v, inTruth := jsonptr.GetTokens(want, toks)
		switch c := parent.(type) {
		case map[string]any:
			if inTruth {
				c[last] = v
			} else {
				delete(c, last)
			}
		case []any:
			i, err := strconv.Atoi(last)
			if err == nil && i >= 0 && i < len(c) && inTruth {
				c[i] = v
			}
		}
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return prev
	}
	return string(b)
}

// ExplainsNotJSON reports whether feedback tells the model that its
// arguments are not JSON (or not a JSON object) and why: one of the phrases
// "not valid JSON", "invalid JSON" or "not a JSON object" (any case),
// followed on the same line by ": " and a reason, or by " but " and what the
// arguments are instead.
func ExplainsNotJSON(feedback string) bool {
	lower := strings.ToLower(feedback)
	for _, phrase := range []string{"not valid json", "invalid json", "not a json object"} {
		for at := 0; ; {
			i := strings.Index(lower[at:], phrase)
			if i < 0 {
				break
			}
			at += i + len(phrase)
			rest, _, _ := strings.Cut(lower[at:], "\n")
			for _, sep := range []string{": ", " but "} {
				if why, ok := strings.CutPrefix(rest, sep); ok && strings.TrimSpace(why) != "" {
					return true
				}
			}
		}
	}
	return false
}

// FeedbackPaths returns the JSON Pointers written in feedback, in the forms
// validation messages use, without duplicates:
//
//   - a bare pointer starting with "/" after the start of the text,
//     whitespace, "(", "[" or a quote, up to the next whitespace, with
//     trailing punctuation (":,;.)]'") dropped: "- /city: expected string";
//   - a pointer quoted as a JSON string, "\"/my key\"", or in single quotes
//     as jsonschema v5 writes instance locations, "'/city'";
//   - a bracketed location whose parts are joined by " → " (LangChain's and
//     pydantic's form), "[filters → 0 → name]", read as /filters/0/name;
//   - "(root)", read as "".
//
// A pointer inside a URL ("file:///x.json#/properties/a") is not preceded
// by one of the characters above and is not read.
func FeedbackPaths(feedback string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if strings.Contains(feedback, "(root)") {
		add("")
	}
	for i := 0; i < len(feedback); i++ {
		c := feedback[i]
		boundary := i == 0 || strings.IndexByte(" \t\n\r([\"'", feedback[i-1]) >= 0
		switch {
		case c == '"' && i+1 < len(feedback) && feedback[i+1] == '/':
			if s, n, ok := jsonStringAt(feedback[i:]); ok {
				add(s)
				i += n - 1
			}
		case c == '\'' && i+1 < len(feedback) && feedback[i+1] == '/':
			if end := singleQuotedEnd(feedback[i+1:]); end >= 0 {
				add(strings.ReplaceAll(feedback[i+1:i+1+end], `\'`, `'`))
			}
		case c == '[':
			end := strings.IndexAny(feedback[i+1:], "]\n")
			if end >= 0 && feedback[i+1+end] == ']' {
				if p, ok := arrowPath(feedback[i+1 : i+1+end]); ok {
					add(p)
				}
			}
		case c == '/' && boundary:
			end := strings.IndexAny(feedback[i:], " \t\n\r")
			if end < 0 {
				end = len(feedback) - i
			}
			tok := feedback[i : i+end]
			add(tok)
			for len(tok) > 1 && strings.IndexByte(":,;.)]'\"", tok[len(tok)-1]) >= 0 {
				tok = tok[:len(tok)-1]
				add(tok)
			}
		}
	}
	return out
}

// jsonStringAt decodes the JSON string at the start of s and returns it with
// its length in s.
func jsonStringAt(s string) (string, int, bool) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\n':
			return "", 0, false
		case '"':
			var out string
			if err := json.Unmarshal([]byte(s[:i+1]), &out); err != nil {
				return "", 0, false
			}
			return out, i + 1, true
		}
	}
	return "", 0, false
}

// singleQuotedEnd returns the index in s of the first single quote not
// escaped with a backslash, or -1.
func singleQuotedEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\n':
			return -1
		case '\'':
			return i
		}
	}
	return -1
}

// arrowPath reads a pydantic-style location, parts joined by " → ", as a
// JSON Pointer. An empty location is the root.
func arrowPath(loc string) (string, bool) {
	if loc == "" {
		return "", true
	}
	if strings.HasPrefix(loc, " ") || strings.HasSuffix(loc, " ") {
		return "", false
	}
	return jsonptr.FromTokens(strings.Split(loc, " → ")), true
}

func decodeObject(s string) (map[string]any, error) {
	return exactjson.DecodeObject([]byte(s))
}
