package node

import (
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/rooms"
)

// resumeSuccessors forgets an entry when its connection is confirmed or
// after resumeSuccessorTTL, and holds at most maxResumeSuccessors.
func TestResumeSuccessorsBounds(t *testing.T) {
	var r resumeSuccessors
	t0 := time.Unix(1000, 0)
	key := func(i int) rooms.ResumeKey {
		return rooms.ResumeKey{RoomID: "r", Seat: i % 16, SessionID: "s", Gen: uint64(i)}
	}
	links := make([]*rooms.Link, maxResumeSuccessors+1)
	for i := range links {
		links[i] = new(rooms.Link)
	}

	next := key(1)
	next.Gen = 99
	r.record(key(1), next, links[0], t0)
	if got, ok := r.lookup(key(1), t0.Add(time.Second)); !ok || got != next {
		t.Fatalf("lookup: %+v %v, want %+v", got, ok, next)
	}
	if _, ok := r.lookup(key(1), t0.Add(resumeSuccessorTTL)); ok {
		t.Fatal("an entry outlived resumeSuccessorTTL")
	}
	r.confirm(links[0])
	if _, ok := r.lookup(key(1), t0); ok {
		t.Fatal("a confirmed connection's entry is still there")
	}
	if len(r.byKey) != 0 || len(r.byLink) != 0 {
		t.Fatalf("maps hold %d and %d after confirm", len(r.byKey), len(r.byLink))
	}

	// Full: a new entry is not kept while the others are fresh …
	for i := range maxResumeSuccessors {
		r.record(key(i), key(i), links[i], t0)
	}
	r.record(key(maxResumeSuccessors), key(0), links[maxResumeSuccessors], t0)
	if _, ok := r.lookup(key(maxResumeSuccessors), t0); ok || len(r.byKey) != maxResumeSuccessors {
		t.Fatalf("beyond the cap: kept, %d entries", len(r.byKey))
	}
	// … and sweeps the expired ones once they are stale.
	later := t0.Add(resumeSuccessorTTL)
	r.record(key(maxResumeSuccessors), key(0), links[maxResumeSuccessors], later)
	if _, ok := r.lookup(key(maxResumeSuccessors), later); !ok || len(r.byKey) != 1 || len(r.byLink) != 1 {
		t.Fatalf("after the sweep: %d and %d entries", len(r.byKey), len(r.byLink))
	}
}
