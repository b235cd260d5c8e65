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
