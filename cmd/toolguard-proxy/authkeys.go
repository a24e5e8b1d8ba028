package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// The bounds of a key file's entries (-auth-keys). A key is one header
// value an SDK sends as its API key, so it is printable ASCII without
// spaces; minKeyLen keeps out keys short enough to guess. A tenant names
// a metric label and a log field, so it is a short name of letters,
// digits and ._- only.
const (
	minKeyLen    = 16
	maxKeyLen    = 512
	maxTenantLen = 64
	maxKeyFile   = 1 << 20 // bytes: a key file is a list of keys, not a database
)

// keyring is the client keys of -auth-keys, each naming its tenant. It is
// never changed once built; a reload builds a new one. Keys are held only
// as their SHA-256 digests.
type keyring struct {
	entries []keyEntry
	count   int // distinct tenants
}

type keyEntry struct {
	sum    [sha256.Size]byte // SHA-256 of the key
	tenant string
}

// tenant returns the tenant of key, or "" and false when key is none of
// the ring's. The key's SHA-256 digest is compared with every entry's by
// crypto/subtle, with no early exit: the time taken says neither which
// entry matched nor how much of a digest did, and comparing digests of
// fixed length says nothing of a key's length.
func (k *keyring) tenant(key string) (string, bool) {
	sum := sha256.Sum256([]byte(key))
	found := -1
	for i := range k.entries {
		if subtle.ConstantTimeCompare(k.entries[i].sum[:], sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return k.entries[found].tenant, true
}

// keyHash is what a log may say of a client's key: the first 8 hex
// digits of its SHA-256, enough to tell one key from another, not to
// find it.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:4])
}

// loadKeyFile reads the key file at path (-auth-keys). Its errors name
// the path and a line number, never a key.
func loadKeyFile(path string) (*keyring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("larger than %d bytes", maxKeyFile)
	}
	return parseKeyFile(b)
}

// parseKeyFile reads a key file: one key per line, "KEY TENANT" (fields
// separated by spaces or tabs); blank lines and lines whose first
// non-blank character is # are skipped, and a third field beginning with
// # is a comment. A key is minKeyLen to maxKeyLen bytes of printable
// ASCII; a tenant 1 to maxTenantLen letters, digits, '.', '_' or '-'. A
// key given twice is an error, since one key has one tenant; a tenant may
// have several keys (a rotation). A file with no key is an error: it would
// refuse every request. An error says which line and what is wrong with
// it, never the key it holds.
func parseKeyFile(b []byte) (*keyring, error) {
	k := &keyring{}
	firstLine := map[[sha256.Size]byte]int{}
	tenants := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxKeyFile+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) > 2 && strings.HasPrefix(fields[2], "#") {
			fields = fields[:2]
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want KEY TENANT, found %d fields", n, len(fields))
		}
		key, tenant := fields[0], fields[1]
		if err := checkKey(key); err != nil {
			return nil, fmt.Errorf("line %d: the key %v", n, err)
		}
		if err := checkTenant(tenant); err != nil {
			return nil, fmt.Errorf("line %d: the tenant %v", n, err)
		}
		sum := sha256.Sum256([]byte(key))
		if first, ok := firstLine[sum]; ok {
			return nil, fmt.Errorf("line %d: the key of line %d again (a key has one tenant)", n, first)
		}
		firstLine[sum] = n
		k.entries = append(k.entries, keyEntry{sum, tenant})
		tenants[tenant] = true
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(k.entries) == 0 {
		return nil, fmt.Errorf("no keys (lines KEY TENANT): every request would be refused")
	}
	k.count = len(tenants)
	return k, nil
}

// checkKey reports what is wrong with a key, without quoting it.
func checkKey(key string) error {
	if len(key) < minKeyLen || len(key) > maxKeyLen {
		return fmt.Errorf("is %d bytes long, want %d to %d", len(key), minKeyLen, maxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("has a byte that is not printable ASCII at offset %d", i)
		}
	}
	return nil
}

// checkTenant reports what is wrong with a tenant's name.
func checkTenant(tenant string) error {
	if len(tenant) > maxTenantLen {
		return fmt.Errorf("is %d bytes long, want at most %d", len(tenant), maxTenantLen)
	}
	for i := 0; i < len(tenant); i++ {
		c := tenant[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%q has a character other than letters, digits, '.', '_' and '-'", tenant)
		}
	}
	return nil
}
