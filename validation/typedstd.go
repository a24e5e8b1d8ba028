package validation

import (
	"log/slog"
	"math/big"
	"reflect"
	"time"

	gjs "github.com/google/jsonschema-go/jsonschema"
)

// stdSchemas returns the schemas [Typed] gives the standard-library types
// that github.com/google/jsonschema-go v0.4.3 maps to a bare
// {"type": "string"}, each saying what encoding/json really accepts:
//
//   - time.Time: an RFC 3339 string, "format": "date-time" (asserted, so a
//     bad value is a violation at its own path);
//   - big.Int: a JSON number (its UnmarshalJSON takes no quoted string),
//     "type": "integer";
//   - slog.Level: a level name with an optional offset ("INFO", "warn",
//     "DEBUG+2"), as slog.Level's UnmarshalJSON parses it;
//   - big.Rat and big.Float stay strings ("1/3", "2.5"): JSON Schema has no
//     format for them.
//
// A fresh map on each call: inference may not share mutable schemas.
func stdSchemas() map[reflect.Type]*gjs.Schema {
	return map[reflect.Type]*gjs.Schema{
		reflect.TypeFor[time.Time]():  {Type: "string", Format: "date-time"},
		reflect.TypeFor[big.Int]():    {Type: "integer"},
		reflect.TypeFor[big.Rat]():    {Type: "string"},
		reflect.TypeFor[big.Float]():  {Type: "string"},
		reflect.TypeFor[slog.Level](): {Type: "string", Pattern: slogLevelPattern},
	}
}

// slogLevelPattern matches what slog.Level.UnmarshalText accepts: a level
// name in any case, optionally followed by a signed offset.
const slogLevelPattern = `^([Dd][Ee][Bb][Uu][Gg]|[Ii][Nn][Ff][Oo]|[Ww][Aa][Rr][Nn]|[Ee][Rr][Rr][Oo][Rr])([+-][0-9]+)?$`
