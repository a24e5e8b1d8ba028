package httpguard

import (
	"fmt"
	"strings"
)

// maxSchemaDepth is encoding/json's nesting limit: it refuses to read a
// document nested deeper, so a request whose tool schema is nested past it
// could not be read at all, and no tool of it would be guarded.
const maxSchemaDepth = 10000

// errSchemaTooDeep is wireTool.Err for a schema nested past maxSchemaDepth.
var errSchemaTooDeep = fmt.Errorf("httpguard: the schema is nested more than %d levels deep", maxSchemaDepth)

// deepSchema stands, in the copy of a request body that encoding/json
// reads (readableBody), for a tool schema nested past maxSchemaDepth. A
// JSON string is no schema, so a request that sends these very bytes as a
// schema only gets the same refusal for that tool.
const deepSchema = `"\u0000toolguard: schema nested too deep"`

// isDeepSchema reports whether a schema read from readableBody's copy is
// deepSchema.
func isDeepSchema(s []byte) bool { return string(s) == deepSchema }

// schemaFinder returns the spans of a request body's tool schemas (the
// body is the object at r).
type schemaFinder func(b []byte, r span) ([]span, error)

// readableBody returns body as encoding/json reads it whole: body itself
// when it can be read, else a copy in which each tool schema (found by
// schemas) nested past maxSchemaDepth is deepSchema, so that only those
// tools go unguarded (wireTool.Err) and the rest of the request is read.
// errJSON when neither body nor the copy is one JSON object.
func readableBody(body []byte, schemas schemaFinder) ([]byte, error) {
	if err := checkObject(body); err == nil || nestingDepth(body) <= maxSchemaDepth {
		return body, err
	}
	r, err := root(body)
	if err != nil || kind(body, r) != '{' {
		return nil, errJSON
	}
	sps, err := schemas(body, r)
	if err != nil {
		return nil, err
	}
	var edits []edit
	for _, sp := range sps {
		if nestingDepth(raw(body, sp)) > maxSchemaDepth {
			edits = append(edits, edit{at: sp, text: []byte(deepSchema)})
		}
	}
	if len(edits) == 0 {
		return nil, fmt.Errorf("%w: nested more than %d levels deep", errJSON, maxSchemaDepth)
	}
	out := apply(body, edits...)
	if _, err := parseBody(out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkObject is parseBody's check without its span, which takes another
// pass over the body: nil when b is one JSON object, else the error
// parseBody returns.
func checkObject(b []byte) error {
	switch {
	case !validJSON(b):
		return errJSON
	case b[skipSpace(b, 0)] != '{': // validJSON: a value starts there
		return fmt.Errorf("%w: want an object", errJSON)
	}
	return nil
}

// nestingDepth is the deepest nesting of arrays and objects in the JSON
// text b, read in one pass without recursion.
func nestingDepth(b []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}

// matchingMembers returns the values of the object at sp whose keys match one of
// keys as encoding/json matches a struct's field names: exactly or, failing
// that, without regard to case.
func matchingMembers(b []byte, sp span, keys ...string) ([]span, error) {
	if kind(b, sp) != '{' {
		return nil, nil
	}
	ms, err := objectMembers(b, sp)
	if err != nil {
		return nil, err
	}
	var out []span
	for _, m := range ms {
		for _, k := range keys {
			if strings.EqualFold(m.key, k) {
				out = append(out, m.v)
				break
			}
		}
	}
	return out, nil
}

// elems returns the elements of each array among vs.
func elems(b []byte, vs []span) ([]span, error) {
	var out []span
	for _, v := range vs {
		if kind(b, v) != '[' {
			continue
		}
		es, err := arrayElems(b, v)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

// schemasAt returns the values reached from the object at r through the
// members named by each step in turn (each step's names matched as
// matchingMembers matches them), entering every element of an array met
// on the way.
func schemasAt(b []byte, r span, steps ...[]string) ([]span, error) {
	vs := []span{r}
	for i, names := range steps {
		var next []span
		for _, v := range vs {
			ms, err := matchingMembers(b, v, names...)
			if err != nil {
				return nil, err
			}
			next = append(next, ms...)
		}
		if i == len(steps)-1 {
			return next, nil
		}
		es, err := elems(b, next)
		if err != nil {
			return nil, err
		}
		vs = es
	}
	return vs, nil
}
