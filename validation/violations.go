package validation

import (
	"cmp"
	"encoding/json"
	"math"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/internal/safetext"
)

// maxViolations bounds the violations kept for one call; the rest of a huge
// invalid value is summarized by the first ones in path order.
const maxViolations = 1000

// violations flattens a jsonschema ValidationError tree into one violation
// per failing leaf, with messages built from the schema and the instance
// rather than the validator's text (which echoes model values unquoted).
// The result is sorted by path, keyword and message, without duplicates.
func (s *Schema) violations(root *jsonschema.ValidationError, instance any) *Error {
	var out []Violation
	// Leaves at one path share their preview: 10,000 failing anyOf
	// alternatives would otherwise preview (and sort) the same large
	// object 10,000 times.
	previews := map[string]string{}
	stack := []*jsonschema.ValidationError{root}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(e.Causes) == 0 {
			out = s.leaf(out, e, instance, previews)
			continue
		}
		for i := len(e.Causes) - 1; i >= 0; i-- {
			stack = append(stack, e.Causes[i])
		}
	}
	slices.SortFunc(out, compareViolations)
	out = slices.Compact(out)
	e := &Error{Violations: out}
	if len(out) > maxViolations {
		e.Violations, e.Omitted = out[:maxViolations:maxViolations], len(out)-maxViolations
	}
	return e
}

func compareViolations(a, b Violation) int {
	return cmp.Or(
		cmp.Compare(a.Path, b.Path),
		cmp.Compare(a.Keyword, b.Keyword),
		cmp.Compare(a.Message, b.Message),
		cmp.Compare(a.Got, b.Got),
	)
}

// node finds the compiled schema that owns the keyword at abs (an absolute
// keyword location) and returns it with the keyword path relative to it.
func (s *Schema) node(abs string) (*jsonschema.Schema, string) {
	s.nodesOnce.Do(s.indexNodes)
	if n, ok := s.nodes[abs]; ok {
		return n, ""
	}
	base := abs
	for range 3 {
		i := strings.LastIndexByte(base, '/')
		if i < 0 {
			break
		}
		base = base[:i]
		if n, ok := s.nodes[base]; ok {
			return n, abs[i+1:]
		}
	}
	return nil, ""
}

func (s *Schema) indexNodes() {
	s.nodes = make(map[string]*jsonschema.Schema)
	var visit func(n *jsonschema.Schema)
	visit = func(n *jsonschema.Schema) {
		if n == nil {
			return
		}
		if _, seen := s.nodes[n.Location]; seen {
			return
		}
		s.nodes[n.Location] = n
		for _, c := range []*jsonschema.Schema{n.Ref, n.RecursiveRef, n.DynamicRef, n.Not, n.If, n.Then, n.Else,
			n.PropertyNames, n.UnevaluatedProperties, n.Items2020, n.Contains, n.UnevaluatedItems, n.ContentSchema} {
			visit(c)
		}
		for _, list := range [][]*jsonschema.Schema{n.AllOf, n.AnyOf, n.OneOf, n.PrefixItems} {
			for _, c := range list {
				visit(c)
			}
		}
		for _, c := range n.Properties {
			visit(c)
		}
		for _, c := range n.PatternProperties {
			visit(c)
		}
		for _, c := range n.DependentSchemas {
			visit(c)
		}
		for _, c := range n.Dependencies {
			if c, ok := c.(*jsonschema.Schema); ok {
				visit(c)
			}
		}
		for _, c := range []any{n.AdditionalProperties, n.AdditionalItems, n.Items} {
			switch c := c.(type) {
			case *jsonschema.Schema:
				visit(c)
			case []*jsonschema.Schema:
				for _, c := range c {
					visit(c)
				}
			}
		}
	}
	visit(s.compiled)
}

// leaf appends the violations one failing leaf stands for.
func (s *Schema) leaf(out []Violation, e *jsonschema.ValidationError, instance any, previews map[string]string) []Violation {
	path := normalizePointer(e.InstanceLocation)
	val, found := jsonptr.Get(instance, path)
	got := ""
	if found {
		var seen bool
		if got, seen = previews[path]; !seen {
			got = safetext.Preview(val, maxGot)
			previews[path] = got
		}
	}
	n, kwPath := s.node(e.AbsoluteKeywordLocation)
	keyword, rest, _ := strings.Cut(kwPath, "/")
	at := Violation{Path: path, Keyword: keyword, Got: got}
	switch {
	case n == nil:
		at.Keyword = lastSegment(e.KeywordLocation)
	case keyword == "":
		at.Keyword, at.Message = "false", "no value is allowed here"
	case keyword == "type":
		return typeViolations(out, at, n, val)
	case keyword == "required":
		return requiredViolations(out, at, n, val)
	case keyword == "additionalProperties":
		return unexpectedProperties(out, at, n, val)
	case keyword == "dependencies" || keyword == "dependentRequired":
		if v, ok := dependencyViolation(at, n, rest); ok {
			return append(out, v)
		}
	default:
		at.Message = keywordMessage(n, keyword, val, e)
	}
	if at.Message == "" {
		at.Message = safetext.Sanitize(e.Message, maxMessage)
	}
	return append(out, at)
}

// typeViolations reports a type failure and, because the validator skips
// every other keyword of a node once its type fails, the node's enum and
// const too: otherwise the model would learn the allowed values only after
// another re-ask.
func typeViolations(out []Violation, at Violation, n *jsonschema.Schema, val any) []Violation {
	at.Message = "expected " + strings.Join(n.Types, " or ")
	out = append(out, at)
	if len(n.Enum) > 0 && !slices.ContainsFunc(n.Enum, func(e any) bool { return jsonEqual(e, val) }) {
		out = append(out, Violation{Path: at.Path, Keyword: "enum", Message: enumMessage(n.Enum), Got: at.Got})
	}
	if len(n.Constant) > 0 && !jsonEqual(n.Constant[0], val) {
		out = append(out, Violation{Path: at.Path, Keyword: "const", Message: "expected " + safetext.Preview(n.Constant[0], 200), Got: at.Got})
	}
	return out
}

// requiredViolations reports each missing required property at its own
// path.
func requiredViolations(out []Violation, at Violation, n *jsonschema.Schema, val any) []Violation {
	obj, _ := val.(map[string]any)
	for _, name := range n.Required {
		if _, ok := obj[name]; ok {
			continue
		}
		msg := "missing required property"
		if p := n.Properties[name]; p != nil && len(p.Types) > 0 {
			msg += " (" + strings.Join(p.Types, " or ") + ")"
		}
		out = append(out, Violation{Path: jsonptr.Append(at.Path, name), Keyword: at.Keyword, Message: msg})
	}
	return out
}

// unexpectedProperties reports each property additionalProperties refuses,
// at its own path, naming the allowed ones.
func unexpectedProperties(out []Violation, at Violation, n *jsonschema.Schema, val any) []Violation {
	allowed := make([]string, 0, len(n.Properties))
	for name := range n.Properties {
		allowed = append(allowed, name)
	}
	slices.Sort(allowed)
	msg := "unexpected property; no properties are allowed here"
	if len(allowed) > 0 {
		msg = "unexpected property; allowed properties: " + quoteList(allowed, 20)
	}
	obj, _ := val.(map[string]any)
	for name, v := range obj {
		if _, ok := n.Properties[name]; ok || matchesPattern(n, name) {
			continue
		}
		out = append(out, Violation{Path: jsonptr.Append(at.Path, name), Keyword: at.Keyword, Message: msg, Got: safetext.Preview(v, maxGot)})
	}
	return out
}

// dependencyViolation reports the property a dependency requires, at its
// own path; rest is the keyword location after the keyword.
func dependencyViolation(at Violation, n *jsonschema.Schema, rest string) (Violation, bool) {
	dep, idx, _ := strings.Cut(rest, "/")
	dep = jsonptr.Unescape(urlUnescape(dep))
	i, _ := strconv.Atoi(idx)
	var names []string
	if at.Keyword == "dependentRequired" {
		names = n.DependentRequired[dep]
	} else if list, ok := n.Dependencies[dep].([]string); ok {
		names = list
	}
	if i >= len(names) {
		return Violation{}, false
	}
	return Violation{Path: jsonptr.Append(at.Path, names[i]), Keyword: at.Keyword,
		Message: "missing property, required when " + safetext.Quote(dep, maxPath) + " is present"}, true
}

// keywordMessage says what a keyword of n expected, or "" to use the
// validator's own message.
func keywordMessage(n *jsonschema.Schema, keyword string, val any, e *jsonschema.ValidationError) string {
	switch keyword {
	case "enum":
		return enumMessage(n.Enum)
	case "const":
		if len(n.Constant) > 0 {
			return "expected " + safetext.Preview(n.Constant[0], 200)
		}
	case "format":
		return "expected a string in format " + safetext.Quote(n.Format, 60)
	case "minimum":
		return "expected a number >= " + ratString(n.Minimum)
	case "exclusiveMinimum":
		return "expected a number > " + ratString(n.ExclusiveMinimum)
	case "maximum":
		return "expected a number <= " + ratString(n.Maximum)
	case "exclusiveMaximum":
		return "expected a number < " + ratString(n.ExclusiveMaximum)
	case "multipleOf":
		return "expected a multiple of " + ratString(n.MultipleOf)
	case "minLength":
		return "expected at least " + strconv.Itoa(n.MinLength) + " characters" + countOf(val)
	case "maxLength":
		return "expected at most " + strconv.Itoa(n.MaxLength) + " characters" + countOf(val)
	case "pattern":
		if n.Pattern != nil {
			return "expected a string matching the pattern " + safetext.Quote(n.Pattern.String(), maxPath)
		}
	case "minItems":
		return "expected at least " + strconv.Itoa(n.MinItems) + " items" + countOf(val)
	case "maxItems":
		return "expected at most " + strconv.Itoa(n.MaxItems) + " items" + countOf(val)
	case "additionalItems":
		if items, ok := n.Items.([]*jsonschema.Schema); ok {
			return "expected at most " + strconv.Itoa(len(items)) + " items" + countOf(val)
		}
	case "minProperties":
		return "expected at least " + strconv.Itoa(n.MinProperties) + " properties" + countOf(val)
	case "maxProperties":
		return "expected at most " + strconv.Itoa(n.MaxProperties) + " properties" + countOf(val)
	case "uniqueItems":
		return "expected unique items; " + safetext.Sanitize(e.Message, maxMessage)
	case "not":
		return "the value must not match the schema under \"not\""
	case "oneOf":
		return "expected exactly one alternative of \"oneOf\" to match, but " + safetext.Sanitize(e.Message, maxMessage)
	}
	return ""
}

// enumMessage says which values an enum allows, at most 20 of them.
func enumMessage(enum []any) string {
	vals := make([]string, 0, min(len(enum), 21))
	for i, ev := range enum {
		if i == 20 {
			vals = append(vals, "and "+strconv.Itoa(len(enum)-i)+" more")
			break
		}
		vals = append(vals, safetext.Preview(ev, 80))
	}
	return "expected one of " + strings.Join(vals, ", ")
}

// jsonEqual reports whether two decoded JSON values are equal as JSON
// [Schema]'s enum and const compare them: numbers by value (1 equals 1.0),
// objects regardless of key order.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	ra, okA := numberRat(a)
	rb, okB := numberRat(b)
	return okA && okB && ra.Cmp(rb) == 0
}

// numberRat returns a decoded JSON number's exact value.
func numberRat(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case json.Number:
		return new(big.Rat).SetString(string(x))
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, false
		}
		return new(big.Rat).SetFloat64(x), true
	case int:
		return new(big.Rat).SetInt64(int64(x)), true
	case int64:
		return new(big.Rat).SetInt64(x), true
	}
	return nil, false
}

func countOf(v any) string {
	switch x := v.(type) {
	case string:
		return " (got " + strconv.Itoa(len([]rune(x))) + ")"
	case []any:
		return " (got " + strconv.Itoa(len(x)) + ")"
	case map[string]any:
		return " (got " + strconv.Itoa(len(x)) + ")"
	}
	return ""
}

func matchesPattern(n *jsonschema.Schema, name string) bool {
	for re := range n.PatternProperties {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// quoteList quotes up to max names, noting how many more there are.
func quoteList(names []string, max int) string {
	var b strings.Builder
	for i, name := range names {
		if i == max {
			b.WriteString(", and " + strconv.Itoa(len(names)-i) + " more")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(safetext.Quote(name, 60))
	}
	return b.String()
}

func lastSegment(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// normalizePointer turns the validator's instance locations, whose tokens
// are URL-escaped, into plain RFC 6901 JSON Pointers.
func normalizePointer(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	toks := strings.Split(p, "/")
	for i, t := range toks {
		toks[i] = urlUnescape(t)
	}
	return strings.Join(toks, "/")
}

func urlUnescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}
