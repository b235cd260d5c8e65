package backbone

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

type counter struct {
	N    int      `json:"n"`
	Tags []string `json:"tags,omitempty"`
}

func openKV(t *testing.T, cfg KVConfig) *KV[counter] {
	t.Helper()
	_, c := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := c.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: "test_kv", History: 1})
	if err != nil {
		t.Fatalf("KeyValue: %v", err)
	}
	return NewKV[counter](kv, cfg)
}

func TestKVCreateGetPutDelete(t *testing.T) {
	kv := openKV(t, KVConfig{Name: "counter"})
	ctx := context.Background()

	if _, _, err := kv.Get(ctx, "a"); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("Get missing: %v, want ErrKeyNotFound", err)
	}
	rev, err := kv.Create(ctx, "a", &counter{N: 1})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if _, err := kv.Create(ctx, "a", &counter{N: 2}); !errors.Is(err, ErrKeyExists) {
		t.Fatalf("Create again: %v, want ErrKeyExists", err)
	}
	v, grev, err := kv.Get(ctx, "a")
	if err != nil || v.N != 1 || grev != rev {
		t.Fatalf("Get = %+v, %d, %v; want n 1 at revision %d", v, grev, err, rev)
	}
	if _, err := kv.UpdateAt(ctx, "a", &counter{N: 3}, rev+100); !errors.Is(err, ErrConflict) {
		t.Fatalf("UpdateAt a stale revision: %v, want ErrConflict", err)
	}
	prev, err := kv.Put(ctx, "a", &counter{N: 4})
	if err != nil || prev <= rev {
		t.Fatalf("Put = %d, %v; want a revision after %d", prev, err, rev)
	}
	if err := kv.Delete(ctx, "a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, _, err := kv.Get(ctx, "a"); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("Get deleted: %v, want ErrKeyNotFound", err)
	}
	if _, err := kv.Create(ctx, "a", &counter{N: 5}); err != nil {
		t.Fatalf("Create after Delete: %v", err)
	}
	if err := kv.Purge(ctx, "a"); err != nil {
		t.Fatalf("Purge: %v", err)
	}
	if err := kv.Purge(ctx, "never"); err != nil {
		t.Fatalf("Purge missing: %v", err)
	}
	if _, _, err := kv.Update(ctx, "a", func(*counter) error { return nil }); !errors.Is(err, ErrKeyNotFound) {
		t.Fatalf("Update purged: %v, want ErrKeyNotFound", err)
	}
	if _, err := kv.Put(ctx, "bad key", &counter{}); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Put bad key: %v, want ErrInvalidKey", err)
	}
}

func TestKVValueTooLarge(t *testing.T) {
	kv := openKV(t, KVConfig{MaxValueBytes: 64})
	big := &counter{Tags: []string{string(make([]byte, 100))}}
	if _, err := kv.Put(context.Background(), "a", big); !errors.Is(err, ErrValueTooLarge) {
		t.Fatalf("Put: %v, want ErrValueTooLarge", err)
	}
}

// Concurrent updates of one key lose nothing: the compare-and-set loop
// retries the losers.
func TestKVUpdateConcurrent(t *testing.T) {
	kv := openKV(t, KVConfig{MaxRetries: 1000})
	ctx := context.Background()
	if _, err := kv.Create(ctx, "c", &counter{}); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tag := strconv.Itoa(w*each + i)
				if _, _, err := kv.Update(ctx, "c", func(c *counter) error {
					c.N++
					c.Tags = append(c.Tags, tag)
					return nil
				}); err != nil {
					t.Errorf("Update: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	v, _, err := kv.Get(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if v.N != writers*each || len(v.Tags) != writers*each {
		t.Fatalf("n = %d with %d tags, want %d", v.N, len(v.Tags), writers*each)
	}
}

func TestKVUpdateAbortsAndConflicts(t *testing.T) {
	kv := openKV(t, KVConfig{MaxRetries: 2})
	ctx := context.Background()
	if _, err := kv.Create(ctx, "c", &counter{N: 1}); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	if _, _, err := kv.Update(ctx, "c", func(*counter) error { return stop }); err != stop {
		t.Fatalf("Update = %v, want fn's error as is", err)
	}
	// Another writer gets in between every read and write.
	_, _, err := kv.Update(ctx, "c", func(c *counter) error {
		if _, err := kv.Put(ctx, "c", &counter{N: c.N + 10}); err != nil {
			t.Fatal(err)
		}
		c.N = -1
		return nil
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Update under constant writes: %v, want ErrConflict", err)
	}
	v, _, _ := kv.Get(ctx, "c")
	if v.N != 21 {
		t.Fatalf("n = %d, want 21 (two foreign writes, none of ours)", v.N)
	}
}

func TestKVKeys(t *testing.T) {
	kv := openKV(t, KVConfig{MaxKeys: 3})
	ctx := context.Background()
	for _, k := range []string{"r.1", "r.2", "s.1"} {
		if _, err := kv.Put(ctx, k, &counter{}); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := kv.Keys(ctx, "r.*")
	slices.Sort(keys)
	if err != nil || !slices.Equal(keys, []string{"r.1", "r.2"}) {
		t.Fatalf("Keys(r.*) = %v, %v", keys, err)
	}
	if _, err := kv.Put(ctx, "s.2", &counter{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Keys(ctx); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("Keys over MaxKeys: %v, want ErrTooManyKeys", err)
	}
}

func TestLostRace(t *testing.T) {
	for _, code := range []jetstream.ErrorCode{10071, 10164} {
		if !lostRace(&jetstream.APIError{ErrorCode: code}) {
			t.Errorf("lostRace(API error %d) = false", code)
		}
	}
	if lostRace(&jetstream.APIError{ErrorCode: 10077}) || lostRace(errors.New("x")) {
		t.Error("lostRace of other errors = true")
	}
}
