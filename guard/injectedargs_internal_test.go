package guard

import (
	"slices"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

func TestDrop(t *testing.T) {
	t.Parallel()
	names := []string{"user_id", "a/b"}
	tests := []struct {
		args, want string
		paths      []string
	}{
		{`{"q": 1}`, `{"q": 1}`, nil},
		{`{"q": 1, "user_id": "admin"}`, `{"q":1}`, []string{"/user_id"}},
		{`{"USER_ID": "admin", "User_Id": "x", "q": 1}`, `{"q":1}`, []string{"/USER_ID", "/User_Id"}},
		{`{"user\u005fid": "admin"}`, `{}`, []string{"/user_id"}},
		{`{"uſer_id": "admin", "q": "é"}`, `{"q":"é"}`, []string{"/uſer_id"}}, // ſ folds to s, as encoding/json matches fields
		{`{"q": "é"}`, `{"q": "é"}`, nil},
		{`"{\"q\": 1, \"user_id\": \"admin\"}"`, `"{\"q\":1}"`, []string{"/user_id"}}, // double-encoded: repair.DoubleEncoded decodes it
		{`"{\"q\": 1}"`, `"{\"q\": 1}"`, nil},
		{`"user_id"`, `"user_id"`, nil},
		{"\u00a0{\"user_id\": \"admin\", \"q\": 1}\u2003", `{"q":1}`, []string{"/user_id"}}, // Unicode blanks, which validation trims
		{`{"a/b": 1}`, `{}`, []string{"/a~1b"}},
		{`{"q": {"user_id": "nested stays"}}`, `{"q": {"user_id": "nested stays"}}`, nil},
		{`{"user_id": "admin"`, `{"user_id": "admin"`, nil}, // not JSON: Withhold's and Redact's job
		{`["user_id"]`, `["user_id"]`, nil},
		{``, ``, nil},
		// The rest is kept byte for byte: a repeated key stays repeated, for
		// validation to refuse; numbers keep their digits.
		{`{"amount": 1, "user_id": "admin", "amount": 1000}`, `{"amount":1,"amount":1000}`, []string{"/user_id"}},
		{`{"user_id": "a", "n": 0.50, "m": 9007199254740993, "user_id": "b"}`, `{"n":0.50,"m":9007199254740993}`, []string{"/user_id"}},
		{`{"user_id": 1} {"q": 2}`, `{"user_id": 1} {"q": 2}`, nil}, // data after the object: not one object
		{`{"user_id": 1,}`, `{"user_id": 1,}`, nil},
	}
	for _, tc := range tests {
		got, paths := DropInjected(tc.args, names)
		if got != tc.want || !slices.Equal(paths, tc.paths) {
			t.Errorf("DropInjected(%s) = %s, %q, want %s, %q", tc.args, got, paths, tc.want, tc.paths)
		}
	}
}

// Withhold replaces arguments no key can be dropped from when they mention
// an injected name, and reports the whole arguments; anything else is
// Drop's.
func TestWithhold(t *testing.T) {
	t.Parallel()
	names := []string{"user_id"}
	for _, tc := range []struct {
		args, want string
		paths      []string
	}{
		{`{"q": 1, "user_id": "admin"}`, `{"q":1}`, []string{"/user_id"}},
		{`{"q": "user_id is mine"}`, `{"q": "user_id is mine"}`, nil}, // an object: its values are validation's
		{`"{\"q\": \"user_id\"}"`, `"{\"q\": \"user_id\"}"`, nil},
		{`{"q": 1, "user_id": "admin"`, WithheldArgs, []string{""}},
		{`{'q': 1, 'USER_ID': 'admin'}`, WithheldArgs, []string{""}},
		{`[{"user_id": "admin"}]`, WithheldArgs, []string{""}},
		{`{"q": 1} {"user_id": "admin"}`, WithheldArgs, []string{""}},
		{`"user_id=admin"`, WithheldArgs, []string{""}},
		{`{"q": 1, "\u0075ser_id": "admin",`, WithheldArgs, []string{""}},
		{`"{\"\\u0075ser_id\": 1"`, WithheldArgs, []string{""}}, // escaped twice, inside a string
		{`{"q": 1, "uſer_id": "admin",`, WithheldArgs, []string{""}},
		{`{"q": 1, "\ud835\udc2eser_id": 1,`, `{"q": 1, "\ud835\udc2eser_id": 1,`, nil}, // 𝐮 is not u
		{`{"q": 1, "note": "C:\\dir",`, `{"q": 1, "note": "C:\\dir",`, nil},
		{`{"q": 1, "userid": 1,`, `{"q": 1, "userid": 1,`, nil},
		{`not json at all`, `not json at all`, nil},
		{``, ``, nil},
	} {
		got, paths := WithholdInjected(tc.args, names)
		if got != tc.want || !slices.Equal(paths, tc.paths) {
			t.Errorf("WithholdInjected(%s) = %s, %q, want %s, %q", tc.args, got, paths, tc.want, tc.paths)
		}
	}
	if got, paths := WithholdInjected(`{"user_id": 1`, nil); got != `{"user_id": 1` || paths != nil {
		t.Errorf("Withhold with no names = %s, %q; want the arguments unchanged", got, paths)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	names := []string{"user_id"}
	e := &validation.Error{Violations: []validation.Violation{
		{Path: "", Keyword: "json", Message: "not JSON", Got: `"{\"user_id\": \"admin\""`},
		{Path: "/user_id", Keyword: "type", Message: "expected string", Got: "1"},
		{Path: "/USER_ID/x", Keyword: "type", Message: "expected string", Got: "1"},
		{Path: "/order", Keyword: "type", Message: "expected integer", Got: `"seven"`},
	}}
	got := RedactInjected(e, names)
	want := []validation.Violation{
		{Path: "", Keyword: "json", Message: "not JSON"},
		{Path: "/order", Keyword: "type", Message: "expected integer", Got: `"seven"`},
	}
	if got == nil || !slices.Equal(got.Violations, want) {
		t.Errorf("Redact = %+v, want %+v", got, want)
	}
	if len(e.Violations) != 4 {
		t.Error("Redact modified its argument")
	}
	only := &validation.Error{Violations: []validation.Violation{{Path: "/user_id", Keyword: "required"}}}
	if got := RedactInjected(only, names); got != nil {
		t.Errorf("Redact of violations at injected paths only = %+v, want nil", got)
	}
	clean := &validation.Error{Violations: []validation.Violation{{Path: "/order", Keyword: "type"}}}
	if got := RedactInjected(clean, names); got != clean {
		t.Errorf("Redact of an error with nothing to redact = %p, want the same %p", got, clean)
	}
}
