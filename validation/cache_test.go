package validation_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/validation"
)

func weatherSchema() map[string]any {
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []any{"city"},
	}
}

// TestCacheCompilesOnceUnderContention: 200 goroutines released at once ask
// one Cache for the same schema; they all get the same *Schema and the cache
// holds one compiled schema. "same map" exercises the identity path, "equal
// maps" (a fresh map per goroutine, as a caller that rebuilds its tools
// each call) the content fingerprint behind it.
func TestCacheCompilesOnceUnderContention(t *testing.T) {
	t.Parallel()
	const goroutines = 200
	shared := weatherSchema()
	tests := []struct {
		name   string
		schema func() any
	}{
		{"same map", func() any { return shared }},
		{"equal maps", func() any { return weatherSchema() }},
		{"same string", func() any { return `{"type":"object","required":["city"]}` }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cache := validation.NewCache()
			inputs := make([]any, goroutines)
			for i := range inputs {
				inputs[i] = tc.schema()
			}
			got := make([]*validation.Schema, goroutines)
			errs := make([]error, goroutines)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					got[i], errs[i] = cache.Get(inputs[i])
				}()
			}
			close(start)
			wg.Wait()
			for i := range goroutines {
				if errs[i] != nil {
					t.Fatalf("goroutine %d: Get = %v", i, errs[i])
				}
				if got[i] != got[0] {
					t.Fatalf("goroutine %d got *Schema %p, goroutine 0 got %p: compiled more than once", i, got[i], got[0])
				}
			}
			if n := cache.Len(); n != 1 {
				t.Errorf("Len() = %d after %d concurrent Gets of one schema, want 1", n, goroutines)
			}
			if err := got[0].ValidateJSON([]byte(`{"city": "Paris"}`)); err != nil {
				t.Errorf("ValidateJSON(valid) = %v, want nil", err)
			}
			if err := got[0].ValidateJSON([]byte(`{}`)); err == nil {
				t.Error("ValidateJSON({}) = nil, want a missing-city violation")
			}
		})
	}
}

// TestCacheStaysBounded: a cache of size 16 fed 200 distinct schemas never
// holds more than 16, and still answers correctly for schemas it forgot.
func TestCacheStaysBounded(t *testing.T) {
	t.Parallel()
	const size, distinct = 16, 200
	cache := validation.NewCacheSize(size)
	schemaN := func(i int) map[string]any {
		return map[string]any{
			"type":       "object",
			"properties": map[string]any{fmt.Sprintf("p%d", i): map[string]any{"type": "integer"}},
			"required":   []any{fmt.Sprintf("p%d", i)},
		}
	}
	for i := range distinct {
		if _, err := cache.Get(schemaN(i)); err != nil {
			t.Fatalf("Get(schema %d) = %v", i, err)
		}
		if n := cache.Len(); n > size {
			t.Fatalf("Len() = %d after %d distinct schemas, want <= %d", n, i+1, size)
		}
	}
	t.Logf("Len() = %d after %d distinct schemas (size %d)", cache.Len(), distinct, size)
	s, err := cache.Get(schemaN(0)) // long evicted: compiled again
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ValidateJSON([]byte(`{"p0": 1}`)); err != nil {
		t.Errorf("ValidateJSON({p0: 1}) = %v, want nil", err)
	}
	if err := s.ValidateJSON([]byte(`{"p1": 1}`)); err == nil {
		t.Error(`ValidateJSON({"p1": 1}) = nil, want a missing-p0 violation`)
	}
}

// TestCacheStaysBoundedUnderConcurrentInserts: concurrent inserters may each
// pass the "full?" check before any evicts, so the bound is soft: the cache
// can overshoot size by at most the number of goroutines inserting at once,
// and evictions bring it back.
func TestCacheStaysBoundedUnderConcurrentInserts(t *testing.T) {
	t.Parallel()
	const size, goroutines, each = 16, 32, 20
	cache := validation.NewCacheSize(size)
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				if _, err := cache.Get(fmt.Sprintf(`{"type":"object","title":"g%d-%d"}`, g, i)); err != nil {
					errs[g] = err
					return
				}
				if n := cache.Len(); n > size+goroutines {
					errs[g] = fmt.Errorf("Len() = %d, want <= %d", n, size+goroutines)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for g, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", g, err)
		}
	}
	if n := cache.Len(); n > size+goroutines {
		t.Errorf("Len() = %d after %d distinct schemas, want <= %d", n, goroutines*each, size+goroutines)
	}
}

// TestCacheRebuiltSchemaIsNotKeptAlive: a schema map rebuilt for every call
// is remembered under a few identities only, then found by fingerprint.
func TestCacheRebuiltSchemaIsNotKeptAlive(t *testing.T) {
	t.Parallel()
	c := validation.NewCache()
	var first *validation.Schema
	for i := range 100 {
		m := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
		s, err := c.Get(m)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = s
		} else if s != first {
			t.Fatalf("Get(rebuilt map %d) compiled again", i)
		}
	}
	if n := c.IdentityLen(); n > 8 {
		t.Errorf("cache remembers %d identities of one rebuilt schema, want at most 8", n)
	}
	if n := c.Len(); n != 1 {
		t.Errorf("cache holds %d compiled schemas, want 1", n)
	}
}
