package validation

import (
	"encoding/json"
	"math/big"
	"regexp"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The fast path validates arguments while it decodes them: one pass over
// the bytes, no map[string]any, for schemas built from the keywords tool
// schemas use (see fastNode). It only ever answers "valid": anything else
// (a violation, a keyword or a value it does not handle, a limit reached)
// sends the call to the reference path — DecodeArgs, then the compiled
// santhosh-tekuri/jsonschema/v5 schema — which then decides and reports.
// So the violations reported never come from the fast path, and the only
// way it could be wrong is by accepting what the reference path refuses:
// TestFastPathAgrees (every BFCL call and violation, every
// JSON-Schema-Test-Suite case it claims) and FuzzFastPath (random schemas of
// the subset times random arguments) check that it never does.

// fastNode is one subschema of the fast path, compiled from the v5
// schema's own parse of the document, so that drafts, "$ref" resolution and
// keyword values mean exactly what they mean to the reference path.
type fastNode struct {
	// opaque is a subschema with a keyword the fast path does not handle
	// (not, if, uniqueItems, ...): a value that reaches it goes to the
	// reference path, the rest of the schema keeps the fast path.
	opaque bool
	never  bool // the boolean schema false

	types uint8 // fastType bits; 0 means any type

	constant []fastValue // at most one
	enum     []fastValue
	format   func(any) bool

	minProps, maxProps int // -1 when absent
	required           []string
	props              map[string]*fastNode
	patterns           []fastPattern
	addlNever          bool      // additionalProperties: false
	addl               *fastNode // additionalProperties as a schema

	items              *fastNode
	minItems, maxItems int

	minLen, maxLen int
	pattern        *regexp.Regexp

	minimum, exclMinimum, maximum, exclMaximum, multipleOf *fastNumber

	inPlace []*fastNode // "$ref" and "allOf": all must accept the value
	anyOf   []*fastNode
	oneOf   []*fastNode
}

type fastPattern struct {
	re   *regexp.Regexp
	node *fastNode
}

const (
	typeNull uint8 = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeInteger
	typeString
)

// typeBit returns the bit of a JSON Schema type name; false for a name that
// is none.
func typeBit(name string) (uint8, bool) {
	switch name {
	case "null":
		return typeNull, true
	case "boolean":
		return typeBoolean, true
	case "object":
		return typeObject, true
	case "array":
		return typeArray, true
	case "number":
		return typeNumber, true
	case "integer":
		return typeInteger, true
	case "string":
		return typeString, true
	}
	return 0, false
}

// fastValue is a value of "enum" or "const".
type fastValue struct {
	kind  uint8 // one typeX bit (typeNumber for every number)
	str   string
	b     bool
	num   *big.Rat
	deep  bool // an array or an object: the fast path defers
	plain string
}

// fastNumber is a bound of a numeric keyword, with its int64 value when it
// has one, to compare integers without math/big.
type fastNumber struct {
	rat   *big.Rat
	i     int64
	isInt bool
}

func newFastNumber(r *big.Rat) *fastNumber {
	if r == nil {
		return nil
	}
	n := &fastNumber{rat: r}
	if r.IsInt() && r.Num().IsInt64() {
		n.i, n.isInt = r.Num().Int64(), true
	}
	return n
}

// compileFast returns the fast path for a compiled schema, or nil when the
// schema applies subschemas to one value in a cycle ("$ref": "#" inside
// allOf) that the reference path reports as a loop. Subschemas with
// keywords the fast path does not handle are opaque.
func compileFast(root *jsonschema.Schema) *fastNode {
	c := fastCompiler{nodes: map[*jsonschema.Schema]*fastNode{}, onStack: map[*jsonschema.Schema]bool{}}
	n := c.node(root)
	if c.unsupported {
		return nil
	}
	return n
}

type fastCompiler struct {
	nodes       map[*jsonschema.Schema]*fastNode
	onStack     map[*jsonschema.Schema]bool // in-place chain being compiled
	unsupported bool
}

func (c *fastCompiler) node(s *jsonschema.Schema) *fastNode {
	if s == nil || c.unsupported {
		return nil
	}
	if n, ok := c.nodes[s]; ok {
		return n
	}
	if !fastSupported(s) {
		n := &fastNode{opaque: true}
		c.nodes[s] = n
		return n
	}
	n := &fastNode{
		minProps: s.MinProperties, maxProps: s.MaxProperties,
		minItems: s.MinItems, maxItems: s.MaxItems,
		minLen: s.MinLength, maxLen: s.MaxLength,
		pattern:     s.Pattern,
		required:    s.Required,
		minimum:     newFastNumber(s.Minimum),
		exclMinimum: newFastNumber(s.ExclusiveMinimum),
		maximum:     newFastNumber(s.Maximum),
		exclMaximum: newFastNumber(s.ExclusiveMaximum),
		multipleOf:  newFastNumber(s.MultipleOf),
	}
	c.nodes[s] = n
	if s.Always != nil {
		if !*s.Always {
			n.never = true
		}
		return n
	}
	for _, t := range s.Types {
		bit, ok := typeBit(t)
		if !ok {
			n.opaque = true
			return n
		}
		n.types |= bit
	}
	if len(s.Constant) > 0 {
		n.constant = []fastValue{newFastValue(s.Constant[0])}
	}
	for _, e := range s.Enum {
		n.enum = append(n.enum, newFastValue(e))
	}
	if s.Format != "" {
		n.format = jsonschema.Formats[s.Format] // as the compiler resolves it (AssertFormat)
	}
	// Children of an object or an array consume a level of the value, so
	// a cycle through them ends with the value; in-place ones do not.
	if len(s.Properties) > 0 {
		n.props = make(map[string]*fastNode, len(s.Properties))
		for name, p := range s.Properties {
			n.props[name] = c.child(p)
		}
	}
	for re, p := range s.PatternProperties {
		n.patterns = append(n.patterns, fastPattern{re, c.child(p)})
	}
	switch a := s.AdditionalProperties.(type) {
	case bool:
		n.addlNever = !a
	case *jsonschema.Schema:
		n.addl = c.child(a)
	}
	switch it := s.Items.(type) {
	case *jsonschema.Schema:
		n.items = c.child(it)
	}
	if s.Items2020 != nil {
		n.items = c.child(s.Items2020)
	}
	c.onStack[s] = true
	if s.Ref != nil {
		n.inPlace = append(n.inPlace, c.inPlace(s.Ref))
	}
	for _, a := range s.AllOf {
		n.inPlace = append(n.inPlace, c.inPlace(a))
	}
	for _, a := range s.AnyOf {
		n.anyOf = append(n.anyOf, c.inPlace(a))
	}
	for _, a := range s.OneOf {
		n.oneOf = append(n.oneOf, c.inPlace(a))
	}
	delete(c.onStack, s)
	return n
}

// child compiles the subschema of a member or an element: a fresh in-place
// chain starts there.
func (c *fastCompiler) child(s *jsonschema.Schema) *fastNode {
	saved := c.onStack
	c.onStack = map[*jsonschema.Schema]bool{}
	n := c.node(s)
	c.onStack = saved
	return n
}

// inPlace compiles a subschema applied to the same value, refusing a
// cycle.
func (c *fastCompiler) inPlace(s *jsonschema.Schema) *fastNode {
	if c.onStack[s] {
		c.unsupported = true
		return nil
	}
	if n, ok := c.nodes[s]; ok {
		// Compiled before, maybe from another chain: check that its own
		// in-place subschemas do not lead back onto this chain.
		if c.reaches(s, map[*jsonschema.Schema]bool{}) {
			c.unsupported = true
			return nil
		}
		return n
	}
	return c.node(s)
}

// reaches reports whether an in-place chain from s reaches a schema on the
// current chain.
func (c *fastCompiler) reaches(s *jsonschema.Schema, seen map[*jsonschema.Schema]bool) bool {
	if seen[s] {
		return false
	}
	seen[s] = true
	next := append([]*jsonschema.Schema{s.Ref}, s.AllOf...)
	next = append(next, s.AnyOf...)
	next = append(next, s.OneOf...)
	for _, t := range next {
		if t == nil {
			continue
		}
		if c.onStack[t] || c.reaches(t, seen) {
			return true
		}
	}
	return false
}

// fastSupported reports whether s uses only keywords the fast path
// handles; if not, its node is opaque. Annotations (title, description, default, examples, ...) never
// affect validation.
func fastSupported(s *jsonschema.Schema) bool {
	if _, tuple := s.Items.([]*jsonschema.Schema); tuple {
		return false
	}
	return s.RecursiveRef == nil && s.DynamicRef == nil && s.Not == nil &&
		s.If == nil && s.Then == nil && s.Else == nil &&
		s.PropertyNames == nil && !s.RegexProperties &&
		len(s.Dependencies) == 0 && len(s.DependentRequired) == 0 && len(s.DependentSchemas) == 0 &&
		s.UnevaluatedProperties == nil && s.UnevaluatedItems == nil &&
		!s.UniqueItems && s.AdditionalItems == nil && len(s.PrefixItems) == 0 &&
		s.Contains == nil && s.ContentEncoding == "" && s.ContentMediaType == "" && s.ContentSchema == nil &&
		len(s.Extensions) == 0
}

func newFastValue(v any) fastValue {
	switch x := v.(type) {
	case nil:
		return fastValue{kind: typeNull}
	case bool:
		return fastValue{kind: typeBoolean, b: x}
	case string:
		return fastValue{kind: typeString, str: x}
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return fastValue{deep: true} // never equal to anything here: defer
		}
		return fastValue{kind: typeNumber, num: r, plain: string(x)}
	case float64:
		return fastValue{kind: typeNumber, num: new(big.Rat).SetFloat64(x)}
	}
	return fastValue{deep: true}
}
