package node

import (
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/rooms"
)

// Limits of the resume successors (see resumeSuccessors).
const (
	maxResumeSuccessors = 16384
	resumeSuccessorTTL  = 30 * time.Second
)

// resumeSuccessors lets a resume token that was just used be used once
// more, while the client has not shown that it received the WELCOME that
// replaced it. A resume moves the seat to a new generation and its WELCOME
// carries the new token; when that WELCOME is lost (a UDP attempt the
// client gave up on a moment before the reply came, a connection cut
// right after the handshake), the client still holds only the old token,
// and its next attempt used to be refused (ERROR 11) and cost it a re-join
// through C1. So each successful resume is remembered, keyed by the token
// it used, with the key the new token carries; a resume refused for an old
// generation is tried again with that key when the connection it made has
// not yet delivered a message ([Dispatcher.Dispatch] confirms it). The
// token holder gains nothing it did not have: the old token could have
// resumed the seat a moment earlier. Entries live resumeSuccessorTTL; at
// maxResumeSuccessors new ones are not kept (the refusal of today).
type resumeSuccessors struct {
	mu     sync.Mutex
	byKey  map[rooms.ResumeKey]successor   // by the token a resume used
	byLink map[*rooms.Link]rooms.ResumeKey // the connection it made → byKey's key
}

type successor struct {
	next rooms.ResumeKey // the key of the token the WELCOME carried
	link *rooms.Link
	at   time.Time
}

// record remembers that the resume with key used seated link, whose
// WELCOME carried a token for next.
func (r *resumeSuccessors) record(used, next rooms.ResumeKey, link *rooms.Link, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey, r.byLink = map[rooms.ResumeKey]successor{}, map[*rooms.Link]rooms.ResumeKey{}
	}
	if old, ok := r.byKey[used]; ok {
		delete(r.byLink, old.link)
	}
	if len(r.byKey) >= maxResumeSuccessors {
		for k, s := range r.byKey {
			if now.Sub(s.at) >= resumeSuccessorTTL {
				delete(r.byKey, k)
				delete(r.byLink, s.link)
			}
		}
		if len(r.byKey) >= maxResumeSuccessors {
			return
		}
	}
	r.byKey[used] = successor{next: next, link: link, at: now}
	r.byLink[link] = used
}

// lookup returns the key to resume with in place of used, if a resume
// with used seated a connection that has not been confirmed.
func (r *resumeSuccessors) lookup(used rooms.ResumeKey, now time.Time) (rooms.ResumeKey, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.byKey[used]
	if !ok || now.Sub(s.at) >= resumeSuccessorTTL {
		return rooms.ResumeKey{}, false
	}
	return s.next, true
}

// confirm forgets the resume that seated link: its client has spoken on
// it, so it holds the new token.
func (r *resumeSuccessors) confirm(link *rooms.Link) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.byLink[link]; ok {
		delete(r.byLink, link)
		if r.byKey[k].link == link {
			delete(r.byKey, k)
		}
	}
}
