package validation

import (
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Draft is a JSON Schema specification version. It is toolguard's own type,
// so that a new major version of the underlying validator never changes the
// API. A schema's own "$schema" keyword always wins over the default draft.
type Draft int

// The drafts toolguard validates.
const (
	Draft4    Draft = 4
	Draft6    Draft = 6
	Draft7    Draft = 7
	Draft2019 Draft = 2019 // 2019-09
	Draft2020 Draft = 2020 // 2020-12
)

// String returns the draft's usual name, such as "draft-07" or "2020-12".
func (d Draft) String() string {
	switch d {
	case Draft4:
		return "draft-04"
	case Draft6:
		return "draft-06"
	case Draft7:
		return "draft-07"
	case Draft2019:
		return "2019-09"
	case Draft2020:
		return "2020-12"
	}
	return fmt.Sprintf("Draft(%d)", int(d))
}

// Known reports whether d is one of the drafts toolguard validates.
func (d Draft) Known() bool {
	_, ok := d.engine()
	return ok
}

func (d Draft) engine() (*jsonschema.Draft, bool) {
	switch d {
	case Draft4:
		return jsonschema.Draft4, true
	case Draft6:
		return jsonschema.Draft6, true
	case Draft7:
		return jsonschema.Draft7, true
	case Draft2019:
		return jsonschema.Draft2019, true
	case Draft2020:
		return jsonschema.Draft2020, true
	}
	return nil, false
}
