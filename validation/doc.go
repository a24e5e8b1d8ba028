// Package validation compiles JSON Schemas for tool arguments and reports
// every way a tool call breaks them.
//
// [Compile] takes a schema in any form a langchaingo tool carries it (a map,
// raw JSON, a string, jsonschema.Definition, an MCP inputSchema), Typed[T]
// infers one from a Go struct with github.com/google/jsonschema-go, and [Cache]
// compiles each schema once however often and concurrently it is seen.
// Compilation never reads the network or the disk: a "$ref" to anything not
// supplied with [WithResource] is refused ([ErrRefused]).
//
// [Schema.ValidateJSON] decodes tool-call arguments (a JSON object; numbers
// exactly, as json.Number) and returns nil or an *[Error] listing every
// [Violation], sorted, each at its JSON Pointer path with what was expected
// and what was sent. Arguments that are not JSON, not an object, hold a
// duplicate key, or exceed the limits of limits.go (depth, size, number
// length) are one violation with keyword "json".
//
// ValidateJSON and [Schema.Parse] first try a fast path that validates the
// arguments while decoding them, in one pass over the bytes and without
// allocating, for the keywords tool schemas use (type, properties, required,
// additionalProperties, patternProperties, items, enum, const, numeric
// bounds, lengths, pattern, format, "$ref", allOf, anyOf, oneOf: every BFCL
// tool schema). It only ever concludes "valid", under the same limits and
// duplicate-key refusal; anything else — a violation, a value reaching a
// subschema with another keyword, a value it does not handle — is decided
// and reported by the reference path (decode, then
// santhosh-tekuri/jsonschema/v5), so what is reported never depends on which
// path ran. Tests check that the two agree on every BFCL call and
// JSON-Schema-Test-Suite case, and FuzzFastPath on random schemas and
// arguments.
//
// The draft is the schema's "$schema", else [WithDefaultDraft] ([Draft7]).
// Formats are asserted for every draft. Everything here is safe for
// concurrent use.
package validation
