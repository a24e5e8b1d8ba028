package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/internal/safetext"
)

// Schema is a compiled JSON Schema for one tool's arguments. It is immutable
// and safe for concurrent use.
//
// A *Schema marshals to its JSON Schema, so it can be placed directly in
// llms.FunctionDefinition.Parameters for providers that marshal parameters
// (OpenAI, Anthropic, Bedrock, Mistral, Ollama). langchaingo's googleai
// provider insists on a map[string]any: give it Map().
type Schema struct {
	raw      []byte
	compiled *jsonschema.Schema
	fast     *fastNode  // nil when the schema is outside the fast path
	typed    *typedHook // set by Typed: decode into T and run its Validate hook
	// ignoredMeta is the root "$schema" that named no known draft and no
	// supplied resource, and was ignored in favour of the default draft.
	ignoredMeta string
	// maxValues is how many values arguments may hold for this schema
	// (MaxValues, or fewer when many subschemas apply to each value).
	maxValues int

	nodesOnce sync.Once
	nodes     map[string]*jsonschema.Schema // compiled sub-schemas by location
}

// ErrRefused is reported (wrapped) by [Compile] for a schema whose "$ref" or
// "$schema" names a document that was not supplied with [WithResource].
// Compilation never reads the network or the file system.
var ErrRefused = errors.New("validation: schema loading refused")

// baseURL is the location given to every compiled schema. Relative "$ref"s
// resolve against it and, like any other document not supplied with
// [WithResource], are refused.
const baseURL = "toolguard:///tool-schema.json"

// Option configures [Compile].
type Option func(*compileConfig)

type compileConfig struct {
	draft     Draft
	resources map[string][]byte
	err       error
	// closeObjects: WithClosedObjects.
	closeObjects bool
}

// WithDefaultDraft sets the draft for schemas that do not declare one with
// "$schema" (default [Draft7]).
func WithDefaultDraft(d Draft) Option {
	return func(c *compileConfig) {
		if _, ok := d.engine(); !ok {
			c.err = fmt.Errorf("validation: WithDefaultDraft(%d): unknown draft", int(d))
			return
		}
		c.draft = d
	}
}

// WithResource makes the JSON document doc (in any form [Compile] takes)
// available to "$ref" under the absolute URL url, without any network or
// file access. Use it for shared definitions that several tool schemas
// reference.
func WithResource(url string, doc any) Option {
	return func(c *compileConfig) {
		b, err := schemaBytes(doc)
		if err != nil {
			c.err = fmt.Errorf("validation: WithResource(%q): %w", url, err)
			return
		}
		if c.resources == nil {
			c.resources = make(map[string][]byte)
		}
		c.resources[url] = b
	}
}

// Compile compiles a JSON Schema given as a map[string]any, json.RawMessage,
// []byte, string, *Schema (returned as is) or any other JSON-marshalable
// value, such as langchaingo's jsonschema.Definition or a
// *jsonschema.Schema of github.com/google/jsonschema-go.
//
// The draft is the schema's "$schema" if it has one, else the default
// ([WithDefaultDraft], [Draft7]). A root "$schema" that names neither a draft
// toolguard knows (draft-04 to 2020-12, over http or https, with or without
// a trailing "#") nor a document supplied with [WithResource] is ignored: the
// schema is compiled with the default draft, and IgnoredMetaSchema reports
// the URL (the keywords tool schemas use mean the same in every draft).
// Formats ("date", "email", "uuid", ...) are
// asserted for every draft; unknown formats are ignored. "$ref"s to documents
// other than the schema itself and those given with WithResource are refused
// with an error wrapping [ErrRefused]: nothing is loaded from the network or
// the disk.
//
// A schema object with keys but no JSON Schema keyword ({"city": ""}, a Go
// value marshaled) is refused with an error wrapping [ErrNoKeyword]; one
// nested deeper than [MaxDepth], or whose subschemas could apply more than
// [MaxApplications] times to one value, with [ErrTooComplex].
//
// Compile does the work each time; ToolArgValidation and [Cache] compile each
// schema once.
func Compile(schema any, opts ...Option) (*Schema, error) {
	if s, ok := schema.(*Schema); ok && s != nil {
		return s, nil
	}
	cfg := compileConfig{draft: Draft7}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	raw, err := schemaBytes(schema)
	if err != nil {
		return nil, err
	}
	return compileBytes(raw, &cfg)
}

// schemaBytes returns the JSON text of a schema given in any accepted form.
func schemaBytes(schema any) ([]byte, error) {
	switch s := schema.(type) {
	case nil:
		return nil, errors.New("validation: no schema (nil)")
	case *Schema:
		if s == nil {
			return nil, errors.New("validation: no schema (nil *Schema)")
		}
		return s.raw, nil
	}
	raw, err := exactjson.Text(schema)
	if err != nil {
		return nil, fmt.Errorf("validation: schema of type %T cannot be marshaled to JSON: %w", schema, err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		if syn := (*json.SyntaxError)(nil); errors.As(err, &syn) && strings.HasSuffix(syn.Error(), "exceeded max depth") {
			return nil, fmt.Errorf("%w: nested deeper than %d levels", ErrTooComplex, MaxDepth)
		}
		return nil, fmt.Errorf("validation: schema is not valid JSON: %w", err)
	}
	if depthExceeds(buf.Bytes(), MaxDepth) {
		return nil, fmt.Errorf("%w: nested deeper than %d levels", ErrTooComplex, MaxDepth)
	}
	return buf.Bytes(), nil
}

func compileBytes(raw []byte, cfg *compileConfig) (s *Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("validation: the schema compiler failed on this schema: %v", r)
		}
	}()
	if err := checkKeywords(raw); err != nil {
		return nil, err
	}
	if cfg.closeObjects {
		raw = closeObjects(raw)
	}
	draft, _ := cfg.draft.engine()
	c := jsonschema.NewCompiler()
	c.Draft = draft
	c.AssertFormat = true
	c.LoadURL = func(url string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%w: %q is not available offline (supply it with validation.WithResource)", ErrRefused, url)
	}
	for url, doc := range cfg.resources {
		if err := c.AddResource(url, bytes.NewReader(doc)); err != nil {
			return nil, fmt.Errorf("validation: resource %q: %w", url, err)
		}
	}
	doc, ignored := withoutUnknownMetaSchema(raw, cfg.resources)
	if err := c.AddResource(baseURL, bytes.NewReader(doc)); err != nil {
		return nil, fmt.Errorf("validation: %w", err)
	}
	compiled, err := c.Compile(baseURL)
	if err != nil {
		return nil, fmt.Errorf("validation: compile: %w", err)
	}
	apps := newSchemaGraph(compiled).maxApplications(MaxDepth, MaxApplications)
	if apps > MaxApplications {
		return nil, fmt.Errorf("%w: its subschemas would apply more than %d times to one value "+
			"(through $ref, allOf, anyOf, oneOf, if/then/else, ...)", ErrTooComplex, MaxApplications)
	}
	return &Schema{raw: raw, compiled: compiled, fast: compileFast(compiled), ignoredMeta: ignored, maxValues: valuesFor(apps)}, nil
}

// withoutUnknownMetaSchema returns raw without its root "$schema" keyword,
// and that keyword's value, when the value is a string that names no draft
// the compiler knows and no supplied resource. Otherwise it returns raw as
// is and "".
func withoutUnknownMetaSchema(raw []byte, resources map[string][]byte) ([]byte, string) {
	if !bytes.Contains(raw, []byte(`"$schema"`)) {
		return raw, ""
	}
	m, err := exactjson.DecodeObject(raw)
	if err != nil {
		return raw, ""
	}
	url, ok := m["$schema"].(string)
	if !ok || knownDraftURL(url) {
		return raw, ""
	}
	if _, ok := resources[url]; ok {
		return raw, ""
	}
	if base, _, _ := strings.Cut(url, "#"); base != url {
		if _, ok := resources[base]; ok {
			return raw, ""
		}
	}
	delete(m, "$schema")
	doc, err := json.Marshal(m)
	if err != nil {
		return raw, ""
	}
	return doc, url
}

// knownDraftURL reports whether url is a meta-schema URL the compiler
// recognizes without loading it (the same rule as the compiler's).
func knownDraftURL(url string) bool {
	if rest, ok := strings.CutPrefix(url, "http://"); ok {
		url = "https://" + rest
	}
	if i := strings.IndexByte(url, '#'); i >= 0 && (url[i:] == "#" || url[i:] == "#/") {
		url = url[:i]
	}
	switch url {
	case "https://json-schema.org/schema",
		"https://json-schema.org/draft/2020-12/schema",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft-07/schema",
		"https://json-schema.org/draft-06/schema",
		"https://json-schema.org/draft-04/schema":
		return true
	}
	return false
}

// IgnoredMetaSchema returns the root "$schema" URL that [Compile] did not
// recognize and ignored, validating with the default draft instead, or ""
// when the schema declares a known draft, a supplied meta-schema or none.
func (s *Schema) IgnoredMetaSchema() string { return s.ignoredMeta }

// MarshalJSON returns the schema's JSON text (compacted, keys in the order
// given).
func (s *Schema) MarshalJSON() ([]byte, error) {
	return bytes.Clone(s.raw), nil
}

// Map returns a new map holding the schema's JSON, for APIs that want a
// map[string]any (langchaingo's googleai provider). Numbers are json.Number.
// The map is plain JSON: compiled again, it validates what the schema does
// but has no [Validator] hook. To keep the hook of a [Typed] schema sent as
// a map, give ToolArgValidation the *[Schema] itself (WithSchema, or the
// agent package, which does so for its tools).
func (s *Schema) Map() map[string]any {
	m, err := exactjson.DecodeObject(s.raw)
	if err != nil {
		return map[string]any{} // a boolean schema: no map form
	}
	return m
}

// String returns the schema's JSON text.
func (s *Schema) String() string { return string(s.raw) }

// ValidateJSON validates tool-call arguments: a JSON object, where empty
// input means {}. It returns nil or a *[Error] listing every violation.
// Arguments that are not JSON, or not a JSON object, are one violation at the
// root ("") whose message says so and gives the parser's reason; so are
// arguments [DecodeArgs] refuses for another reason, and arguments holding
// more values than this schema accepts (see [MaxWork]).
func (s *Schema) ValidateJSON(args []byte) error {
	if _, ok := s.fastAccepts(args); ok {
		if e := s.typedCheck(args); e != nil {
			return e
		}
		return nil
	}
	if _, e := s.parseReference(args); e != nil {
		return e
	}
	return nil
}

// AcceptsFast reports whether args are valid by validation's one-pass
// check alone, which reads the bytes without decoding them (and, for a
// typed schema, its decoding and Validate hook): true means
// [Schema.ValidateJSON] would return nil. false means only that the fast
// check could not tell (a keyword outside it, or arguments it refuses):
// call ValidateJSON or [Schema.Parse] to know. A pipeline that decodes
// only what it must change calls it first.
func (s *Schema) AcceptsFast(args []byte) bool {
	if _, ok := s.fastAccepts(args); ok {
		return s.typedCheck(args) == nil
	}
	return false
}

// Parse is [Schema.ValidateJSON] for code that goes on to use the
// arguments: it returns them decoded as by [DecodeArgs] together with nil
// or the *[Error] listing every violation, as a typed value. The decoded
// arguments are nil when they are refused before validation: not JSON, not
// an object, beyond DecodeArgs's limits or holding more values than the
// schema accepts. A nil *[Schema] accepts any JSON object: Parse then only
// decodes.
func (s *Schema) Parse(args []byte) (map[string]any, *Error) {
	if trimmed, ok := s.fastAccepts(args); ok {
		if m, err := exactjson.DecodeObject(trimmed); err == nil {
			return m, s.typedCheck(args)
		}
	}
	return s.parseReference(args)
}

// parseReference is [Schema.Parse] without the fast path: decode, check the
// limits, validate the decoded value.
func (s *Schema) parseReference(args []byte) (map[string]any, *Error) {
	v, values, e := decodeArgs(args)
	if e != nil {
		return nil, e
	}
	if s == nil {
		return v, nil
	}
	if e := s.checkValues(values); e != nil {
		return nil, e
	}
	return v, s.validate(v, args)
}

// Validate validates a decoded JSON value, as produced by [DecodeArgs] or by
// a json.Decoder with UseNumber (float64 numbers are accepted too). It
// returns nil or a *[Error] listing every violation. Unlike
// [Schema.ValidateJSON], it accepts any JSON value at the root, not only an
// object. A value nested deeper than [MaxDepth], or holding more values than
// the schema accepts (see [MaxWork]), is one violation at the root, like in
// ValidateJSON.
func (s *Schema) Validate(v any) error {
	if e := s.Check(v); e != nil {
		return e
	}
	return nil
}

// Check is [Schema.Validate] returning the *[Error] itself: nil when v is
// valid. A nil *[Schema] accepts any value.
func (s *Schema) Check(v any) *Error {
	if s == nil {
		return nil
	}
	values, deep := measure(v, MaxDepth)
	if deep {
		return tooDeep()
	}
	if e := s.checkValues(values); e != nil {
		return e
	}
	return s.validate(v, nil)
}

// checkValues refuses arguments holding more values than this schema
// accepts (see [MaxWork]).
func (s *Schema) checkValues(values int) *Error {
	limit := s.maxValues
	if limit == 0 {
		limit = MaxValues
	}
	if values <= limit {
		return nil
	}
	return tooMany(values, limit)
}

// validate checks v against the schema and, for typed schemas, decodes raw
// (v marshaled when raw is nil) into the Go type and runs its Validate hook.
func (s *Schema) validate(v any, raw []byte) *Error {
	if e := s.validateSchema(v); e != nil {
		return e
	}
	if s.typed != nil {
		return s.typed.check(v, raw)
	}
	return nil
}

func (s *Schema) validateSchema(v any) (e *Error) {
	defer func() {
		if r := recover(); r != nil {
			e = &Error{Violations: []Violation{{Keyword: "schema", Message: fmt.Sprintf("the validator failed on this value: %v", r)}}}
		}
	}()
	verr := s.compiled.Validate(v)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(verr, &ve) {
		return s.violations(ve, v)
	}
	// An infinite $ref loop or a value that is not JSON.
	return &Error{Violations: []Violation{{Keyword: "schema", Message: safetext.Sanitize(verr.Error(), maxMessage)}}}
}

// fastAccepts reports whether the fast path accepts args for s's JSON
// Schema (not its typed hook), and returns args trimmed ("{}" for blank
// args). False means only that the reference path must decide.
func (s *Schema) fastAccepts(args []byte) ([]byte, bool) {
	if s == nil || s.fast == nil {
		return nil, false
	}
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		trimmed = emptyObject
	}
	if trimmed[0] != '{' {
		return nil, false
	}
	limit := s.maxValues
	if limit == 0 {
		limit = MaxValues
	}
	return trimmed, fastValidate(s.fast, trimmed, limit) == pass
}

var emptyObject = []byte("{}")

// typedCheck runs a typed schema's decoding and Validate hook on args that
// the JSON Schema accepts.
func (s *Schema) typedCheck(args []byte) *Error {
	if s.typed == nil {
		return nil
	}
	if args == nil {
		args = emptyObject // as the reference path marshals the empty arguments
	}
	return s.typed.check(nil, args)
}
