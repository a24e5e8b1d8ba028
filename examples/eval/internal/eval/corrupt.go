package eval

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/toolguard/toolguard/internal/jsonptr"
	"github.com/toolguard/toolguard/validation"
)

// Kind is one way a model gets a tool call wrong.
type Kind int

// The corruption kinds, in table order.
const (
	DropRequired   Kind = iota // a required key is missing
	WrongType                  // a value of the wrong JSON type
	EnumViolation              // a value outside the enum
	ExtraKey                   // a key the (closed) schema does not allow
	NullOptional               // null for an optional key
	EmptyObject                // {} for an optional key
	EmptyArray                 // [] for an optional key
	NumberAsString             // "5" for a number
	BoolAsString               // "true" for a boolean
	DoubleEncoded              // the arguments object as a JSON string
	CodeFence                  // the arguments in a Markdown code fence
	TrailingProse              // the arguments followed by prose
	TrailingComma              // a comma before a closing brace or bracket
	PythonLiteral              // a Python dict: single quotes, True/False/None
	Multi                      // two or three of the above at once
	// InventedKey is ExtraKey on the schema as published, which does not
	// close the object: a key the tool does not list, which JSON Schema
	// accepts (only WithClosedObjects rejects it). It is judged against the
	// closed schema. Its value comes after Multi so that the other kinds'
	// random draws stay what they were; it is listed after ExtraKey.
	InventedKey
	// CapitalisedBool, ArrayAsJSONString and ArrayAsPythonString are the
	// shapes real models send that issue 30 measured: "True" or "TRUE" for a
	// boolean, and an array sent as a string holding it in JSON
	// ("[\"M\", \"L\"]") or as a Python list ("['M', 'L']"). Their values
	// come last for the same reason as InventedKey's, and Multi never draws
	// them, so that its calls stay what they were; they are listed after
	// BoolAsString.
	CapitalisedBool
	ArrayAsJSONString
	ArrayAsPythonString
)

// Kinds lists every kind in table order.
var Kinds = []Kind{DropRequired, WrongType, EnumViolation, ExtraKey, InventedKey, NullOptional, EmptyObject, EmptyArray,
	NumberAsString, BoolAsString, CapitalisedBool, ArrayAsJSONString, ArrayAsPythonString,
	DoubleEncoded, CodeFence, TrailingProse, TrailingComma, PythonLiteral, Multi}

var kindNames = [...]string{
	DropRequired:   "required key dropped",
	WrongType:      "wrong JSON type",
	EnumViolation:  "value outside the enum",
	ExtraKey:       "extra key (closed schema)",
	NullOptional:   "null on an optional key",
	EmptyObject:    "{} on an optional key",
	EmptyArray:     "[] on an optional key",
	NumberAsString: `number as a string ("5")`,
	BoolAsString:   `boolean as a string ("true")`,
	DoubleEncoded:  "arguments double-encoded",
	CodeFence:      "arguments in a code fence",
	TrailingProse:  "arguments followed by prose",
	TrailingComma:  "trailing comma",
	PythonLiteral:  "Python literals",
	Multi:          "2–3 corruptions at once",
	InventedKey:    "invented key (open schema)",

	CapitalisedBool:     `capitalised boolean ("True")`,
	ArrayAsJSONString:   `array as a JSON string ("[\"M\"]")`,
	ArrayAsPythonString: `array as a Python list string ("['M']")`,
}

// String returns the kind's label in the tables: "required key dropped".
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// textual reports whether k corrupts the text of the arguments rather than
// a value in them.
func (k Kind) textual() bool { return k >= DoubleEncoded && k <= PythonLiteral }

// Corrupted is one corrupted call, ready to be sent by the simulated model.
type Corrupted struct {
	Kind   Kind
	Parts  []Kind             // the kinds applied (one, or two or three for Multi)
	Truth  string             // the ground-truth arguments, compact JSON
	First  string             // the corrupted arguments of the first attempt
	Schema *validation.Schema // the tool's schema, compiled
	// Params is Schema's JSON, as the tool sends it to the model
	// (Function.Parameters): a raw schema, compiled by ToolArgValidation
	// with its own options (WithClosedObjects), as a real tool's would be.
	Params json.RawMessage
	// Want is what the final arguments must validate against to count as
	// correct; nil means Schema. InventedKey sets it to the closed schema.
	Want *validation.Schema
}

// Judge returns the schema the final arguments must validate against.
func (c Corrupted) Judge() *validation.Schema {
	if c.Want != nil {
		return c.Want
	}
	return c.Schema
}

// Prepared is a Case with its schema compiled, ready to be corrupted.
type Prepared struct {
	Case
	schema    *validation.Schema
	schemaMap map[string]any
	closed    *validation.Schema // schema with additionalProperties: false at the top; nil if not applicable
	closedRaw json.RawMessage    // closed's JSON
	truth     map[string]any
}

// Prepare compiles c's schema, and the closed variant used for ExtraKey.
func Prepare(c Case) (*Prepared, error) {
	s, err := validation.Compile(c.Schema)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.ID, err)
	}
	sm, err := decode(c.Schema)
	if err != nil {
		return nil, err
	}
	schemaMap, _ := sm.(map[string]any)
	tv, err := decode(c.Args)
	if err != nil {
		return nil, err
	}
	truth, ok := tv.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: arguments are not an object", c.ID)
	}
	if err := s.Validate(truth); err != nil {
		return nil, fmt.Errorf("%s: ground truth is invalid: %w", c.ID, err)
	}
	p := &Prepared{Case: c, schema: s, schemaMap: schemaMap, truth: truth}
	p.closed, p.closedRaw = p.closeSchema()
	return p, nil
}

// closeSchema returns the schema with additionalProperties: false on the
// arguments object, the way OpenAI's strict mode wants tools declared. No
// BFCL schema closes an object itself, so without this ExtraKey would never
// apply. nil when the schema is already closed (then it is used as is),
// declares no properties, or would reject the ground truth once closed.
func (p *Prepared) closeSchema() (*validation.Schema, json.RawMessage) {
	if p.schemaMap == nil {
		return nil, nil
	}
	if ap, ok := p.schemaMap["additionalProperties"]; ok && ap == false {
		return p.schema, p.Schema
	}
	props, _ := p.schemaMap["properties"].(map[string]any)
	if len(props) == 0 {
		return nil, nil
	}
	m := make(map[string]any, len(p.schemaMap)+1)
	for k, v := range p.schemaMap {
		m[k] = v
	}
	m["additionalProperties"] = false
	raw := marshal(m)
	s, err := validation.Compile(raw)
	if err != nil || s.Validate(p.truth) != nil {
		return nil, nil
	}
	return s, raw
}

// Corrupt applies kind to a copy of p's ground truth, with randomness drawn
// from a generator seeded by (seed, index, kind) alone, so the result does
// not depend on what else is corrupted or in which order. It reports false
// when kind does not apply to this call (no required key, no enum, ...) or
// the corrupted call would still be valid.
func (p *Prepared) Corrupt(seed uint64, index int, kind Kind) (Corrupted, bool) {
	rng := rand.New(rand.NewPCG(seed, uint64(index)<<8|uint64(kind)))
	g := &gen{p: p, rng: rng, w: deepCopy(p.truth).(map[string]any), schema: p.schema}
	var parts []Kind
	if kind == Multi {
		parts = g.multi()
		if len(parts) < 2 {
			return Corrupted{}, false
		}
	} else {
		if !g.apply(kind) {
			return Corrupted{}, false
		}
		parts = []Kind{kind}
	}
	first := g.text
	if first == "" {
		first = write(g.w, textStyle{comma: -1})
	}
	if g.schema.ValidateJSON([]byte(first)) == nil {
		return Corrupted{}, false
	}
	cor := Corrupted{Kind: kind, Parts: parts, Truth: string(p.Args), First: first, Schema: g.schema, Params: p.Schema}
	switch {
	case kind == InventedKey:
		cor.Schema, cor.Want = p.schema, g.schema
	case g.schema == p.closed:
		cor.Params = p.closedRaw
	}
	return cor, true
}

// gen corrupts one call: value corruptions edit w, a text corruption sets
// text from w.
type gen struct {
	p       *Prepared
	rng     *rand.Rand
	w       map[string]any
	schema  *validation.Schema
	touched []string // paths already corrupted; Multi keeps corruptions apart
	text    string
}

// multi applies two or three different kinds, at most one of them textual
// and applied last, to different parts of the arguments.
func (g *gen) multi() []Kind {
	want := 2 + g.rng.IntN(2)
	// Every kind but Multi, InventedKey (which is ExtraKey judged another
	// way) and the kinds added after it (so that Multi's calls stay what
	// they were), in table order.
	pool := slices.DeleteFunc(slices.Clone(Kinds), func(k Kind) bool { return k >= Multi })
	g.rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	var parts []Kind
	textKind := Kind(-1)
	for _, k := range pool {
		if len(parts) == want {
			break
		}
		if k.textual() {
			if textKind < 0 {
				textKind = k
				parts = append(parts, k)
			}
			continue
		}
		if g.apply(k) {
			parts = append(parts, k)
		}
	}
	if textKind >= 0 && !g.apply(textKind) {
		parts = slices.DeleteFunc(parts, func(k Kind) bool { return k == textKind })
	}
	// Keep table order, so the parts read the same whatever the shuffle.
	slices.Sort(parts)
	return parts
}

func (g *gen) apply(k Kind) bool {
	switch k {
	case DropRequired:
		return g.dropRequired()
	case WrongType:
		return g.wrongType()
	case EnumViolation:
		return g.enumViolation()
	case ExtraKey:
		return g.extraKey()
	case InventedKey:
		return g.p.closed != g.p.schema && g.extraKey()
	case NullOptional:
		return g.emptyOptional(nil)
	case EmptyObject:
		return g.emptyOptional(map[string]any{})
	case EmptyArray:
		return g.emptyOptional([]any{})
	case NumberAsString:
		return g.scalarAsString(func(v any, types []string) (any, bool) {
			n, ok := v.(json.Number)
			if !ok || slices.Contains(types, "string") || !(slices.Contains(types, "number") || slices.Contains(types, "integer")) {
				return nil, false
			}
			return string(n), true
		})
	case BoolAsString:
		return g.scalarAsString(func(v any, types []string) (any, bool) {
			b, ok := v.(bool)
			if !ok || slices.Contains(types, "string") || !slices.Contains(types, "boolean") {
				return nil, false
			}
			return strconv.FormatBool(b), true
		})
	case CapitalisedBool:
		upper := g.rng.IntN(4) == 0 // "TRUE" now and then, "True" mostly
		return g.scalarAsString(func(v any, types []string) (any, bool) {
			b, ok := v.(bool)
			if !ok || slices.Contains(types, "string") || !slices.Contains(types, "boolean") {
				return nil, false
			}
			word := capitalize(strconv.FormatBool(b))
			if upper {
				word = strings.ToUpper(word)
			}
			return word, true
		})
	case ArrayAsJSONString, ArrayAsPythonString:
		return g.scalarAsString(func(v any, types []string) (any, bool) {
			a, ok := v.([]any)
			if !ok || len(a) == 0 || slices.Contains(types, "string") || !slices.Contains(types, "array") {
				return nil, false
			}
			text := write(a, textStyle{comma: -1})
			if k == ArrayAsPythonString {
				py := write(a, textStyle{python: true, comma: -1})
				if py == text {
					return nil, false // numbers only: the Python list is JSON
				}
				text = py
			}
			return text, true
		})
	case DoubleEncoded:
		g.text = string(marshal(write(g.w, textStyle{comma: -1})))
		return true
	case CodeFence:
		lang := []string{"json", ""}[g.rng.IntN(2)]
		g.text = "```" + lang + "\n" + write(g.w, textStyle{indent: true, comma: -1}) + "\n```"
		return true
	case TrailingProse:
		g.text = write(g.w, textStyle{comma: -1}) + prose[g.rng.IntN(len(prose))]
		return true
	case TrailingComma:
		cs := nonEmptyContainers(g.w)
		if len(cs) == 0 {
			return false
		}
		g.text = write(g.w, textStyle{comma: cs[g.rng.IntN(len(cs))]})
		return true
	case PythonLiteral:
		if len(g.w) == 0 {
			return false
		}
		g.text = write(g.w, textStyle{python: true, comma: -1})
		return true
	}
	return false
}

// prose is what models write after the arguments.
var prose = []string{
	"\n\nLet me know if you need anything else!",
	"\nThis will get the information you asked for.",
	" I'll call the tool with these arguments.",
	"\n\nNote: I assumed the default values for the other parameters.",
}

// slot is a property of an object in the arguments, present or not.
type slot struct {
	path     string         // JSON Pointer
	parent   map[string]any // the object in g.w
	key      string
	prop     map[string]any // the property's schema (nil if the schema has none)
	required bool
	present  bool
}

// slots lists the properties of the arguments object and, recursively, of
// present object values whose schema declares properties, in path order.
func (g *gen) slots() []slot {
	var out []slot
	var walk func(obj map[string]any, schema map[string]any, prefix string)
	walk = func(obj map[string]any, schema map[string]any, prefix string) {
		props, _ := schema["properties"].(map[string]any)
		var required []string
		if rs, ok := schema["required"].([]any); ok {
			for _, r := range rs {
				if s, ok := r.(string); ok {
					required = append(required, s)
				}
			}
		}
		keys := make([]string, 0, len(props)+len(required))
		for k := range props {
			keys = append(keys, k)
		}
		keys = append(keys, required...)
		slices.Sort(keys)
		keys = slices.Compact(keys)
		for _, k := range keys {
			prop, _ := props[k].(map[string]any)
			v, present := obj[k]
			s := slot{path: jsonptr.Append(prefix, k), parent: obj, key: k, prop: prop,
				required: slices.Contains(required, k), present: present}
			out = append(out, s)
			if child, ok := v.(map[string]any); ok && prop != nil {
				walk(child, prop, s.path)
			}
		}
	}
	walk(g.w, g.p.schemaMap, "")
	return out
}

// free reports whether path is clear of the corruptions made so far: not
// one of them, not inside one, not holding one.
func (g *gen) free(path string) bool {
	for _, t := range g.touched {
		if jsonptr.IsWithin(path, t) || jsonptr.IsWithin(t, path) {
			return false
		}
	}
	return true
}

// shuffled returns the free slots that pass keep, in random order.
func (g *gen) shuffled(keep func(slot) bool) []slot {
	var out []slot
	for _, s := range g.slots() {
		if g.free(s.path) && keep(s) {
			out = append(out, s)
		}
	}
	g.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// violatedAt reports whether the schema reports a violation at or below
// path for the current arguments.
func (g *gen) violatedAt(path string) bool {
	ve, ok := g.schema.Validate(g.w).(*validation.Error)
	if !ok {
		return false
	}
	for _, v := range ve.Violations {
		if jsonptr.IsWithin(v.Path, path) {
			return true
		}
	}
	return false
}

// try sets the slot to v (or removes it, for remove) and keeps the change
// if the schema now reports a violation there.
func (g *gen) try(s slot, v any, remove bool) bool {
	old, had := s.parent[s.key]
	if remove {
		delete(s.parent, s.key)
	} else {
		s.parent[s.key] = v
	}
	if g.violatedAt(s.path) {
		g.touched = append(g.touched, s.path)
		return true
	}
	if had {
		s.parent[s.key] = old
	} else {
		delete(s.parent, s.key)
	}
	return false
}

func (g *gen) dropRequired() bool {
	for _, s := range g.shuffled(func(s slot) bool { return s.required && s.present }) {
		if g.try(s, nil, true) {
			return true
		}
	}
	return false
}

func types(prop map[string]any) []string {
	switch t := prop["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// wrongType replaces a typed value with one of another JSON type: a word
// for a number, a number for a string, the value wrapped in an array or an
// object, true. Numeric and boolean strings and empty values are left to
// their own kinds.
func (g *gen) wrongType() bool {
	for _, s := range g.shuffled(func(s slot) bool { return s.present && len(types(s.prop)) > 0 }) {
		ts := types(s.prop)
		v := s.parent[s.key]
		var alts []any
		if !slices.Contains(ts, "string") {
			alts = append(alts, "unknown")
		}
		if !slices.Contains(ts, "number") && !slices.Contains(ts, "integer") {
			alts = append(alts, json.Number("1"))
		}
		if !slices.Contains(ts, "boolean") {
			alts = append(alts, true)
		}
		if !slices.Contains(ts, "array") {
			alts = append(alts, []any{deepCopy(v)})
		}
		if !slices.Contains(ts, "object") {
			alts = append(alts, map[string]any{"value": deepCopy(v)})
		}
		if len(alts) == 0 {
			continue
		}
		start := g.rng.IntN(len(alts))
		for i := range alts {
			if g.try(s, alts[(start+i)%len(alts)], false) {
				return true
			}
		}
	}
	return false
}

// enumViolation replaces a value with a near miss outside its enum: another
// case, a plural, a synonym-like "other"; for numbers, one above the
// largest member.
func (g *gen) enumViolation() bool {
	for _, s := range g.shuffled(func(s slot) bool { _, ok := s.prop["enum"].([]any); return s.present && ok }) {
		enum := s.prop["enum"].([]any)
		var alts []any
		switch v := s.parent[s.key].(type) {
		case string:
			for _, a := range []string{strings.ToUpper(v), capitalize(v), v + "s", "other"} {
				if a != v {
					alts = append(alts, a)
				}
			}
		case json.Number:
			hi := 0.0
			for _, e := range enum {
				if n, ok := e.(json.Number); ok {
					if f, err := n.Float64(); err == nil && f > hi {
						hi = f
					}
				}
			}
			alts = append(alts, json.Number(strconv.FormatFloat(hi+1, 'f', -1, 64)))
		default:
			alts = append(alts, "other")
		}
		start := g.rng.IntN(len(alts))
		for i := range alts {
			if a := alts[(start+i)%len(alts)]; !slices.ContainsFunc(enum, func(e any) bool { return e == a }) && g.try(s, a, false) {
				return true
			}
		}
	}
	return false
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	if c := s[0]; c >= 'a' && c <= 'z' {
		return string(c-'a'+'A') + s[1:]
	}
	if c := s[0]; c >= 'A' && c <= 'Z' {
		return string(c-'A'+'a') + s[1:]
	}
	return s
}

// extras are the keys models add that tools did not ask for.
var extras = []struct {
	key   string
	value any
}{
	{"verbose", true}, {"format", "json"}, {"limit", json.Number("10")}, {"language", "en"},
	{"include_details", true}, {"timeout", json.Number("30")},
}

// extraKey adds a hallucinated key to the arguments object and validates
// against the closed schema from then on.
func (g *gen) extraKey() bool {
	if g.p.closed == nil {
		return false
	}
	props, _ := g.p.schemaMap["properties"].(map[string]any)
	start := g.rng.IntN(len(extras))
	for i := range extras {
		e := extras[(start+i)%len(extras)]
		if _, declared := props[e.key]; declared {
			continue
		}
		if _, used := g.w[e.key]; used {
			continue
		}
		prev := g.schema
		g.schema = g.p.closed
		if g.try(slot{path: jsonptr.Append("", e.key), parent: g.w, key: e.key}, e.value, false) {
			return true
		}
		g.schema = prev
	}
	return false
}

// emptyOptional sets an absent optional key to empty, where the schema
// rejects that value.
func (g *gen) emptyOptional(empty any) bool {
	for _, s := range g.shuffled(func(s slot) bool { return !s.required && !s.present }) {
		if g.try(s, deepCopy(empty), false) {
			return true
		}
	}
	return false
}

// scalarAsString replaces a present value with what conv makes of it (a
// string), where the schema then reports a violation.
func (g *gen) scalarAsString(conv func(v any, types []string) (any, bool)) bool {
	for _, s := range g.shuffled(func(s slot) bool { return s.present }) {
		if v, ok := conv(s.parent[s.key], types(s.prop)); ok && g.try(s, v, false) {
			return true
		}
	}
	return false
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}
