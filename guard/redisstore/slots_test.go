package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/toolguard/toolguard/guard"
	"github.com/toolguard/toolguard/guard/redisstore"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// keySlot is the Redis Cluster hash slot of key, as the cluster
// specification computes it: CRC16 (XMODEM: polynomial 0x1021, initial
// value 0) modulo 16384 of the key's hash tag — what lies between its
// first "{" and the first "}" after it, when that is not empty — or of
// the whole key.
func keySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}

// The slot helper computes what Redis computes: the specification's CRC16
// check value and hash-tag examples, and slots CLUSTER KEYSLOT gives.
func TestKeySlot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"123456789", 0x31C3 % clusterSlots}, // the spec's CRC16 check value, 0x31C3
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", keySlot("user1000")},
		{"{user1000}.followers", keySlot("user1000")},
		{"foo{}{bar}", keySlot("foo{}{bar}")}, // empty braces: the whole key
		{"foo{{bar}}zap", keySlot("{bar")},
		{"foo{bar}{zap}", keySlot("bar")},
	} {
		if got := keySlot(tc.key); got != tc.want {
			t.Errorf("keySlot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
	if keySlot("foo{}{bar}") == keySlot("bar") {
		t.Error(`keySlot("foo{}{bar}") took "bar" for the tag`)
	}
}

// oneSlot returns nil if every key of keys hashes to one slot, else an
// error listing each key's slot.
func oneSlot(keys []string) error {
	if len(keys) == 0 {
		return errors.New("no keys")
	}
	for _, k := range keys[1:] {
		if keySlot(k) != keySlot(keys[0]) {
			var b strings.Builder
			for i, k := range keys {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s slot %d", k, keySlot(k))
			}
			return fmt.Errorf("keys in different slots: %s", b.String())
		}
	}
	return nil
}

// sent is one command a store sent, as the recorder saw it.
type sent struct {
	op   string // the store's call that sent it
	name string // the command, lower case: evalsha, eval, hmget
	sha  string // the script's SHA1 for evalsha; "" otherwise
	keys []string
}

// recorder is a go-redis hook that answers every command itself, never
// reaching a server, and records each command's keys: a script's
// (EVALSHA sha numkeys key…) and a key command's (its first argument),
// under the name of the store's call that sent it (op). While failSHA is
// set, it fails that script (op "reserve") and names any other the
// abandon the store then sends in the background.
type recorder struct {
	mu      sync.Mutex
	op      string
	failSHA string
	cmds    []sent
	got     chan sent // each command, as it is recorded
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *recorder) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(context.Context, []redis.Cmder) error { return errors.New("recorder: no pipelines") }
}

func (r *recorder) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		s := sent{name: strings.ToLower(fmt.Sprint(args[0]))}
		switch s.name {
		case "evalsha", "eval":
			n := args[2].(int)
			for _, k := range args[3 : 3+n] {
				s.keys = append(s.keys, k.(string))
			}
			if s.name == "evalsha" {
				s.sha = args[1].(string)
			}
		default:
			s.keys = []string{fmt.Sprint(args[1])}
		}
		r.mu.Lock()
		s.op = r.op
		fail := false
		if r.failSHA != "" {
			s.op, fail = "abandon", s.sha == r.failSHA
			if fail {
				s.op = "reserve"
			}
		}
		r.cmds = append(r.cmds, s)
		r.mu.Unlock()
		r.got <- s
		if fail {
			return errors.New("recorder: injected failure")
		}
		switch c := cmd.(type) {
		case *redis.Cmd:
			switch s.op {
			case "reserve":
				c.SetVal([]any{int64(0), int64(1)}) // count 0 before, added
			case "save":
				c.SetVal(int64(1)) // saved
			default:
				c.SetVal(int64(0))
			}
		case *redis.SliceCmd:
			c.SetVal([]any{nil, nil}) // HMGET of a thread with no state
		default:
			return fmt.Errorf("recorder: unexpected %s", s.name)
		}
		return nil
	}
}

// next waits for the recorder's next command.
func (r *recorder) next(t *testing.T) sent {
	t.Helper()
	select {
	case s := <-r.got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no command sent within 10s")
		return sent{}
	}
}

// scriptsInSource counts the Lua scripts the package defines
// (redis.NewScript in its non-test files).
func scriptsInSource(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(src), "redis.NewScript(")
	}
	return n
}

// slotThreads are thread ids whose keys must stay in one slot: plain, with
// braces that would move a hash tag, empty (whose tag is "%"), and a
// proxy tenant's thread ("LEN:TENANT:ID").
var slotThreads = []string{"chat-42", "a}b{c", "{x}", "", "%", "4:acme:t1"}

// recordAll runs every command the store and the checkpointer send —
// Reserve, a Reserve that fails (whose reservation is then abandoned in
// the background), Release, Save and Load — for every thread of
// slotThreads and every kind of count, through a client whose every
// command the recorder answers, and returns what was sent.
func recordAll(t *testing.T) []sent {
	t.Helper()
	rec := &recorder{got: make(chan sent, 64)}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // never dialled: the hook answers
	c.AddHook(rec)
	t.Cleanup(func() { _ = c.Close() })
	s := redisstore.New(c)
	cp := redisstore.NewCheckpointer(c)
	ctx := context.Background()
	set := func(op, failSHA string) {
		rec.mu.Lock()
		rec.op, rec.failSHA = op, failSHA
		rec.mu.Unlock()
	}
	for _, thread := range slotThreads {
		for _, key := range []guard.ThreadKey{
			{Thread: thread},
			{Thread: thread, Tool: "search"},
			{Thread: thread, Kind: guard.CountModelCalls},
		} {
			set("reserve", "")
			if _, ok, err := s.Reserve(ctx, key, 1, 5); !ok || err != nil {
				t.Fatalf("Reserve(%+v) = %v, %v", key, ok, err)
			}
			reserveSHA := rec.next(t).sha
			// A reserve that fails is abandoned by its id, in the
			// background: the abandon script runs on the same keys.
			set("", reserveSHA)
			if _, _, err := s.Reserve(ctx, key, 1, 5); err == nil {
				t.Fatalf("Reserve(%+v) with the script failing: no error", key)
			}
			if r := rec.next(t); r.op != "reserve" {
				t.Fatalf("the failing Reserve sent %+v first, want its script", r)
			}
			if a := rec.next(t); a.op != "abandon" {
				t.Fatalf("after a failed Reserve the store sent %+v, want the abandon script", a)
			}
			set("release", "")
			if err := s.Release(ctx, key, 1); err != nil {
				t.Fatalf("Release(%+v) = %v", key, err)
			}
			rec.next(t)
		}
		set("save", "")
		if ok, err := cp.Save(ctx, thread, 0, []byte("state")); !ok || err != nil {
			t.Fatalf("Save(%q) = %v, %v", thread, ok, err)
		}
		rec.next(t)
		set("load", "")
		if _, _, err := cp.Load(ctx, thread); err != nil {
			t.Fatalf("Load(%q) = %v", thread, err)
		}
		rec.next(t)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]sent(nil), rec.cmds...)
}

// Every command the store and the checkpointer send — each of the
// package's Lua scripts (reserve, abandon, release, save) and Load's
// HMGET — passes keys that hash to one Redis Cluster slot, the thread's,
// computed with the cluster's CRC16 (keySlot): Redis Cluster refuses a
// script whose keys span slots (CROSSSLOT). The same check fails on the
// same keys without their hash tag.
func TestScriptKeysOneSlot(t *testing.T) {
	t.Parallel()
	cmds := recordAll(t)
	shas := map[string]string{} // sha -> op
	untagged := 0
	for _, c := range cmds {
		if c.sha != "" {
			shas[c.sha] = c.op
		}
		if c.name != "evalsha" && c.name != "hmget" {
			t.Errorf("%s sent %s: want EVALSHA (a script) or HMGET", c.op, c.name)
		}
		if c.name == "evalsha" && len(c.keys) != 2 {
			t.Errorf("%s's script got %d keys %q, want 2: the count or state and the request's record", c.op, len(c.keys), c.keys)
		}
		if err := oneSlot(c.keys); err != nil {
			t.Errorf("%s: %v", c.op, err)
		}
		bare := make([]string, len(c.keys))
		for i, k := range c.keys {
			bare[i] = strings.NewReplacer("{", "", "}", "").Replace(k)
		}
		if len(bare) > 1 && oneSlot(bare) != nil {
			untagged++
		}
	}
	ops := map[string]int{}
	for _, c := range cmds {
		ops[c.op]++
	}
	t.Logf("%d commands (%d threads: %q): reserve %d (%d of them failed on purpose), abandon %d, release %d, save %d, load %d; %d distinct scripts",
		len(cmds), len(slotThreads), slotThreads, ops["reserve"], ops["reserve"]/2, ops["abandon"], ops["release"], ops["save"], ops["load"], len(shas))
	for _, op := range []string{"reserve", "abandon", "release", "save", "load"} {
		for _, c := range cmds {
			if c.op == op && strings.Contains(c.keys[0], "{chat-42}") {
				var parts []string
				for _, k := range c.keys {
					parts = append(parts, fmt.Sprintf("%s slot %d", k, keySlot(k)))
				}
				t.Logf("%-7s %s %s", op, strings.ToUpper(c.name), strings.Join(parts, ", "))
				break
			}
		}
	}
	if want := scriptsInSource(t); len(shas) != want {
		t.Errorf("the recorder saw %d distinct scripts %v, the package defines %d: a script is not covered here", len(shas), shas, want)
	}

	// Without the hash tag the same check fails: the request's record
	// (its id random) lands in a slot of its own.
	multi := 0
	for _, c := range cmds {
		if len(c.keys) > 1 {
			multi++
		}
	}
	t.Logf("the same keys without their braces: %d of %d scripts' keys span slots", untagged, multi)
	if untagged == 0 {
		t.Error("without the braces every script's keys still share a slot: the check proves nothing")
	}
	count, state := "toolguard:chat-42:tool:search", "toolguard:chat-42:checkpoint"
	if err := oneSlot([]string{count, state}); err == nil {
		t.Errorf("oneSlot(%q, %q) = nil, want an error: untagged, they hash apart", count, state)
	} else {
		t.Logf("untagged: %v", err)
	}
}
