package duequeue

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestOrder(t *testing.T) {
	t0 := time.Unix(0, 0)
	q := New[int](0)
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1000
	for i := range n {
		q.Push(t0.Add(time.Duration(rng.IntN(50))*time.Millisecond), i)
	}
	var last Item[int]
	for k := range n {
		if q.Len() != n-k {
			t.Fatalf("Len %d after %d pops", q.Len(), k)
		}
		top := *q.Top()
		it := q.Pop()
		if it != top {
			t.Fatalf("Pop %+v, Top said %+v", it, top)
		}
		if k > 0 && (it.Due.Before(last.Due) || it.Due.Equal(last.Due) && it.Value < last.Value) {
			t.Fatalf("%+v left after %+v: not by due time, then push order", it, last)
		}
		last = it
	}
}

func TestNoAllocations(t *testing.T) {
	q := New[[]byte](64)
	buf := make([]byte, 64)
	now := time.Now()
	if a := testing.AllocsPerRun(1000, func() {
		for i := range 32 {
			q.Push(now.Add(time.Duration(i%7)*time.Millisecond), buf)
		}
		for q.Len() > 0 {
			q.Pop()
		}
	}); a != 0 {
		t.Errorf("%v allocations per 32 pushes and pops", a)
	}
}
