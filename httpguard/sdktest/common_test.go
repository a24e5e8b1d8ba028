package sdktest

import (
	"encoding/json"
	"testing"
)

// weatherSchema is the JSON Schema of the get_weather tool the tests offer.
const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

func weatherParams() map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(weatherSchema), &m); err != nil {
		panic(err)
	}
	return m
}

// jsonEq reports whether a and b are the same JSON value.
func jsonEq(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Errorf("not JSON: %s: %v", a, err)
		return false
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Errorf("not JSON: %s: %v", b, err)
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
