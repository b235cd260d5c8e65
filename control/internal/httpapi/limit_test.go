package httpapi

import (
	"strconv"
	"testing"
	"time"
)

func TestLimiterBounded(t *testing.T) {
	l := NewLimiter(1, 1, 10)
	now := time.Unix(1000, 0)
	for i := range 100 {
		l.Allow(strconv.Itoa(i), now.Add(time.Duration(i)*time.Millisecond))
		if len(l.keys) > 10 {
			t.Fatalf("limiter holds %d keys, limit 10", len(l.keys))
		}
	}
	if !l.Allow("new", now) || l.Allow("new", now) {
		t.Fatal("burst of 1 not enforced")
	}
	var off *Limiter = NewLimiter(-1, 1, 10)
	if off != nil || !off.Allow("x", now) {
		t.Fatal("negative rate must turn the limiter off")
	}
}

// TestLimiterEvictsAFew: a limiter full of keys seen at the same moment
// (a burst of new addresses) forgets an eighth of them, not all: the
// buckets it keeps stay empty. It used to forget every key idle at least
// as long as the mean, which is all of them when they tie.
func TestLimiterEvictsAFew(t *testing.T) {
	const max = 80
	l := NewLimiter(1, 1, max)
	now := time.Unix(1000, 0)
	for i := range max {
		if !l.Allow(strconv.Itoa(i), now) {
			t.Fatalf("key %d: first request refused", i)
		}
	}
	if !l.Allow("new", now) {
		t.Fatal("new key refused")
	}
	if got, want := len(l.keys), max-max/8+1; got != want {
		t.Fatalf("after one eviction the limiter holds %d keys, want %d", got, want)
	}
	kept := 0
	for i := range max {
		if _, ok := l.keys[strconv.Itoa(i)]; ok {
			kept++
			if l.Allow(strconv.Itoa(i), now) {
				t.Fatalf("key %d got a fresh bucket", i)
			}
		}
	}
	if kept != max-max/8 {
		t.Fatalf("kept %d keys, want %d", kept, max-max/8)
	}
}

// TestLimiterEvictsIdlest: the keys idle longest go first.
func TestLimiterEvictsIdlest(t *testing.T) {
	l := NewLimiter(1, 1, 16)
	now := time.Unix(1000, 0)
	for i := range 16 {
		l.Allow(strconv.Itoa(i), now.Add(time.Duration(i)*time.Second))
	}
	l.Allow("new", now.Add(time.Minute))
	for i := range 16 {
		_, ok := l.keys[strconv.Itoa(i)]
		if want := i >= 2; ok != want {
			t.Errorf("key %d (idle %ds) kept: %v, want %v", i, 60-i, ok, want)
		}
	}
}
