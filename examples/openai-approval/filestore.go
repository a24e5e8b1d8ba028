package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FileCheckpointer is a toolstage.Checkpointer kept in a directory, for
// this example only: it lets the runs of the program, each a process of its
// own, share the interrupt's state, so that a resume in one claims the
// interrupt for all of them. A program with replicas uses a shared store
// (guard/redisstore's Checkpointer).
//
// Each saved version of a key is a file of its own, never changed nor
// removed: Dir/<SHA-256 of the key>.<version>.json. Save writes the state
// to a temporary file and links it into place; a link fails when its name
// exists, so of two saves from the same version, in one process or two,
// exactly one succeeds. That needs a local file system with hard links,
// and nothing is ever deleted: fine for an example, not for a service.
type FileCheckpointer struct {
	// Dir is the directory of the states, made on the first Save.
	Dir string
}

// Load implements toolstage.Checkpointer: the state of the highest
// version saved, nil and 0 for a key never saved.
func (f *FileCheckpointer) Load(_ context.Context, key string) ([]byte, int64, error) {
	var version int64
	for {
		_, err := os.Stat(f.path(key, version+1))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		version++
	}
	if version == 0 {
		return nil, 0, nil
	}
	state, err := os.ReadFile(f.path(key, version))
	if err != nil {
		return nil, 0, err
	}
	return state, version, nil
}

// Save implements toolstage.Checkpointer: it stores state as key's version
// version+1 if version is the highest saved (0: none), and reports whether
// it did.
func (f *FileCheckpointer) Save(_ context.Context, key string, version int64, state []byte) (bool, error) {
	if version < 0 {
		return false, nil
	}
	if version > 0 {
		// Versions are never removed: if this one exists now, it always will.
		if _, err := os.Stat(f.path(key, version)); errors.Is(err, fs.ErrNotExist) {
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(f.Dir, ".save-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(state)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	// The compare-and-set: the link fails if another save made this
	// version first.
	err = os.Link(tmp.Name(), f.path(key, version+1))
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

func (f *FileCheckpointer) path(key string, version int64) string {
	return filepath.Join(f.Dir, fmt.Sprintf("%x.%d.json", sha256.Sum256([]byte(key)), version))
}
