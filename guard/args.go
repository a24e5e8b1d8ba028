package guard

// The argument pipeline: decode a tool call's arguments, strip empty
// values, validate, and repair. ToolArgValidation runs it on every tool call
// leaving the model; package agent runs it on calls nothing validated before
// their tool sees them; a program with a loop of its own runs it with
// [CheckArgs].

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/toolguard/toolguard/internal/exactjson"
	"github.com/toolguard/toolguard/repair"
	"github.com/toolguard/toolguard/strip"
	"github.com/toolguard/toolguard/validation"
)

// ArgsOptions says how [CheckArgs] cleans arguments. The zero value strips
// schema-aware and does not repair.
type ArgsOptions struct {
	Strip  strip.Mode
	Repair repair.Repairer // nil: no repair
	// Injected names the top-level properties whose values the program
	// set (package agent's injected arguments). A repair never changes
	// them: repaired arguments in which one of them differs from the input
	// (or input that is not a JSON object, where they cannot be compared)
	// are not used, so a value of the wrong type there stays an error.
	Injected []string
	// NoDecode skips decoding arguments that validation's one-pass check
	// accepts as they are ([validation.Schema.AcceptsFast]): they are only
	// validated, and ArgsResult.Value is nil. For callers
	// that only need the cleaned arguments, as ToolArgValidation, which
	// writes back only what it changed. It has no effect with
	// strip.Recursive, which decodes every call to strip it.
	NoDecode bool
}

// ArgsResult is what [CheckArgs] made of one call's arguments.
type ArgsResult struct {
	// Args are the arguments to pass on: the input itself when Changed is
	// false, else the cleaned arguments as compact JSON. Empty (or blank)
	// input becomes {}, so that whoever reads the call back can unmarshal it.
	Args []byte
	// Value is Args decoded, numbers as json.Number; nil when the arguments
	// could not be decoded, or were valid and not decoded
	// (ArgsOptions.NoDecode).
	Value map[string]any
	// Changed reports that empty values were stripped or the arguments
	// repaired, so Args differ from the input.
	Changed bool
	// Stripped lists the JSON Pointers of the empty values removed, sorted.
	Stripped []string
	// Repairs lists the repairs made. When it is not empty, the repaired
	// arguments validate, or (Err not nil) have fewer violations than the
	// input and none it did not have.
	Repairs []repair.Repair
	// Err lists the violations that remain; nil when the arguments are
	// valid.
	Err *validation.Error
}

// CheckArgs runs the argument pipeline on raw, the arguments of one call, against s (nil:
// any JSON object):
//
//  1. decode (empty means {}) and validate; with strip.Recursive, every
//     empty value is removed first;
//  2. if invalid, strip.SchemaAware removes the empty values whose removal
//     fixes violations and adds none;
//  3. if still invalid and o.Repair is set, the repaired arguments, stripped
//     the same way, are used when they validate and hold o.Injected as the
//     input did, and also when they remove violations and add none: Err
//     then lists only the violations the repairs leave, so that feedback
//     names only what the model must fix.
//
// Arguments that cannot be decoded (not JSON, not an object, beyond
// validation's limits) are never stripped.
func CheckArgs(s *validation.Schema, raw []byte, o ArgsOptions) ArgsResult {
	if o.NoDecode && s != nil && o.Strip != strip.Recursive && len(bytes.TrimSpace(raw)) > 0 && s.AcceptsFast(raw) {
		return ArgsResult{Args: raw}
	}
	res := ArgsResult{Args: raw}
	v, verr := parseArgs(s, raw, o.Strip, &res)
	res.Value = v
	if verr != nil && o.Strip == strip.SchemaAware && v != nil && verr.Omitted == 0 {
		var removed []string
		removed, verr = stripSchemaAwareArgs(s, v, verr)
		res.Stripped = removed
	}
	if verr != nil && o.Repair != nil && mayRepairArgs(raw, v) {
		if rv, reps := o.Repair.Repair(raw, s); len(reps) > 0 && rv != nil && keepsInjected(raw, rv, o.Injected) {
			rres := ArgsResult{Value: rv}
			rerr := cleanArgs(s, rv, o.Strip, &rres)
			if rerr == nil {
				rres.Repairs = reps
				return rres.withArgs(rv)
			}
			if validation.Improves(rerr, verr.Violations) {
				// The repairs fix some violations and add none: they
				// are kept, and only what toolguard could not fix is
				// left for the model.
				rres.Repairs, rres.Err = reps, rerr
				return rres.withArgs(rv)
			}
		}
	}
	res.Err = verr
	if len(res.Stripped) > 0 || v != nil && len(bytes.TrimSpace(raw)) == 0 {
		return res.withArgs(v)
	}
	return res
}

// mayRepairArgs reports whether a repair could make arguments that failed into
// valid ones: they decoded (and broke the schema), or they are not JSON, or
// they are a JSON string (double-encoded). JSON that is an object but could
// not be decoded broke validation's limits or repeats a key, which no repair
// changes, since repaired arguments are held to the same rules; it is not
// decoded a second time.
func mayRepairArgs(raw []byte, v map[string]any) bool {
	if v != nil {
		return true
	}
	t := bytes.TrimSpace(raw)
	return !json.Valid(t) || t[0] == '"'
}

// keepsInjected reports whether repaired, the arguments a repair made of
// raw, holds each of the properties names exactly as raw does (present or
// absent alike).
func keepsInjected(raw []byte, repaired map[string]any, names []string) bool {
	if len(names) == 0 {
		return true
	}
	orig, err := exactjson.DecodeObject(bytes.TrimSpace(raw))
	if err != nil {
		return false
	}
	for _, n := range names {
		was, had := orig[n]
		is, has := repaired[n]
		if had != has || !reflect.DeepEqual(was, is) {
			return false
		}
	}
	return true
}

// parseArgs decodes and validates raw. It strips recursively first with
// strip.Recursive, recording what it removed in res.
func parseArgs(s *validation.Schema, raw []byte, mode strip.Mode, res *ArgsResult) (map[string]any, *validation.Error) {
	if mode != strip.Recursive {
		return s.Parse(raw)
	}
	v, verr := (*validation.Schema)(nil).Parse(raw)
	if verr != nil {
		return nil, verr
	}
	return v, cleanArgs(s, v, mode, res)
}

// cleanArgs strips v (decoded arguments, in place) per mode and validates it,
// recording what it removed in res.
func cleanArgs(s *validation.Schema, v map[string]any, mode strip.Mode, res *ArgsResult) *validation.Error {
	if mode == strip.Recursive {
		res.Stripped = strip.RecursiveStrip(v)
	}
	verr := s.Check(v)
	if verr != nil && mode == strip.SchemaAware && verr.Omitted == 0 {
		res.Stripped, verr = stripSchemaAwareArgs(s, v, verr)
	}
	return verr
}

// stripSchemaAwareArgs runs strip.SchemaAwareStrip on v's complete violations.
func stripSchemaAwareArgs(s *validation.Schema, v map[string]any, verr *validation.Error) ([]string, *validation.Error) {
	removed, remaining := strip.SchemaAwareStrip(v, s, verr.Violations)
	if len(remaining) == 0 {
		return removed, nil
	}
	if len(removed) == 0 {
		return nil, verr
	}
	return removed, &validation.Error{Violations: remaining}
}

// withArgs sets Args to v as compact JSON and marks the result changed.
func (r ArgsResult) withArgs(v map[string]any) ArgsResult {
	b, err := exactjson.Encode(v)
	if err != nil {
		b = []byte("{}") // decoded JSON always encodes; keep the call usable regardless
	}
	r.Args, r.Changed = b, true
	return r
}
