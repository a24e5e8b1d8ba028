package validation

import (
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// schemaGraph is a compiled schema seen as a graph of subschemas, split by
// how each edge applies: to the same value (in place: "$ref", "allOf",
// "anyOf", "not", ...), or to a child of an object or of an array, either
// one particular child ("properties", "prefixItems", array-form "items") or
// any child ("additionalProperties", "patternProperties", "items",
// "contains", ...).
type schemaGraph struct {
	inPlace [][]int
	// key[t] and any[t] are the child edges for an object (t = 0) and for
	// an array (t = 1): a value is one or the other, never both.
	key, any [2][][]int
}

func newSchemaGraph(root *jsonschema.Schema) *schemaGraph {
	g := &schemaGraph{}
	index := map[*jsonschema.Schema]int{}
	var id func(s *jsonschema.Schema) int
	id = func(s *jsonschema.Schema) int {
		if i, ok := index[s]; ok {
			return i
		}
		i := len(g.inPlace)
		index[s] = i
		g.inPlace = append(g.inPlace, nil)
		for t := range 2 {
			g.key[t] = append(g.key[t], nil)
			g.any[t] = append(g.any[t], nil)
		}
		var in []int
		var key, anyc [2][]int
		add := func(list *[]int, cs ...*jsonschema.Schema) {
			for _, c := range cs {
				if c != nil {
					*list = append(*list, id(c))
				}
			}
		}
		const obj, arr = 0, 1
		add(&in, s.Ref, s.RecursiveRef, s.DynamicRef, s.Not, s.If, s.Then, s.Else)
		add(&in, s.AllOf...)
		add(&in, s.AnyOf...)
		add(&in, s.OneOf...)
		for _, c := range s.DependentSchemas {
			add(&in, c)
		}
		for _, c := range s.Dependencies {
			if c, ok := c.(*jsonschema.Schema); ok {
				add(&in, c)
			}
		}
		for _, c := range s.Properties {
			add(&key[obj], c)
		}
		for _, c := range s.PatternProperties {
			add(&anyc[obj], c)
		}
		if c, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			add(&anyc[obj], c)
		}
		add(&anyc[obj], s.UnevaluatedProperties, s.PropertyNames)
		add(&key[arr], s.PrefixItems...)
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			add(&anyc[arr], items)
		case []*jsonschema.Schema:
			add(&key[arr], items...)
		}
		if c, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
			add(&anyc[arr], c)
		}
		add(&anyc[arr], s.Items2020, s.Contains, s.UnevaluatedItems)
		g.inPlace[i] = in
		for t := range 2 {
			g.key[t][i], g.any[t][i] = key[t], anyc[t]
		}
		return i
	}
	id(root)
	return g
}

// maxApplications returns the largest number of subschemas that can apply
// to one value at most depth levels below the root of the arguments,
// saturated at limit+1; limit+1 also when subschemas apply to the same
// value in a cycle.
//
// a[s] at level k counts the subschema applications that applying s to a
// value causes at one value exactly k levels below it, on the worst path.
// At level 0 that is s itself plus what its in-place subschemas cause. At
// level k, for a value that is an object (or an array): what s's object (or
// array) child edges cause at level k-1 one level down — the worst
// particular child plus every any-child edge, since those may all apply to
// the same child — plus what its in-place subschemas cause at level k for
// the same kind of value; a[s] is the worse of the two kinds. Counts
// saturate at limit+1.
func (g *schemaGraph) maxApplications(depth, limit int) int {
	n := len(g.inPlace)
	prev := make([]int, n) // level k-1
	cur := make([]int, n)  // level k
	var kind [2][]int      // level k, per kind of value
	kind[0], kind[1] = make([]int, n), make([]int, n)
	state := make([]uint8, n)
	sat := func(x int) int { return min(x, limit+1) }
	most := 0
	for k := 0; k <= depth; k++ {
		kinds := 2
		if k == 0 {
			kinds = 1 // the value itself: its kind does not matter
		}
		cyclic := false
		for t := range kinds {
			clear(state)
			out := kind[t]
			var level func(s int) int
			level = func(s int) int {
				switch state[s] {
				case 1:
					cyclic = true
					return limit + 1
				case 2:
					return out[s]
				}
				state[s] = 1
				total := 1
				if k > 0 {
					total = 0
					for _, c := range g.key[t][s] {
						total = max(total, prev[c])
					}
					for _, c := range g.any[t][s] {
						total = sat(total + prev[c])
					}
				}
				for _, c := range g.inPlace[s] {
					total = sat(total + level(c))
				}
				state[s] = 2
				out[s] = total
				return total
			}
			for s := range n {
				level(s)
			}
		}
		for s := range n {
			cur[s] = kind[0][s]
			if kinds == 2 {
				cur[s] = max(cur[s], kind[1][s])
			}
		}
		if cyclic || cur[0] > limit {
			return limit + 1
		}
		if cur[0] == 0 {
			return most // nothing applies this deep, nor deeper
		}
		most = max(most, cur[0])
		prev, cur = cur, prev
	}
	return most
}
