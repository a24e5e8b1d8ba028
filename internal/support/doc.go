// Package support is the parent of the packages that serve evaluation and
// tests, never the library: eval (the self-correction evaluation behind
// examples/eval), bfcl and corpus (the BFCL and JSON-Schema-Test-Suite
// data), redisserver (a throwaway redis-server for tests). The library's
// own helpers (the argument pipeline, JSON Pointers, quoting, exact JSON,
// the improve rule) live beside this directory, in internal/. No library
// package imports a package under internal/support outside its tests
// (TestLibraryDoesNotImportSupport); examples/eval is the one program that
// does.
package support
