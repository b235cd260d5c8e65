package node

import (
	"container/heap"
	"errors"
	"sync"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/tokens"
)

// handshake answers the first binary message of a connection (seed
// "连接与握手"): WELCOME, sent by the room, when it seats the connection,
// otherwise ERROR and close. It reports whether the connection is seated.
func (c *conn) handshake(p []byte) bool {
	s := c.s
	hs, err := roomwire.ParseHandshake(p)
	if err != nil {
		return c.reject(roomwire.CodeProtocolUnsupported, err)
	}
	if s.draining.Load() {
		return c.reject(roomwire.CodeNodeDraining, nil)
	}
	link, code, err := s.seat(hs, "", c, c.setExempt)
	if err != nil {
		return c.reject(code, err)
	}
	c.link = link
	c.d = Dispatcher{s: s, link: link}
	c.bound.Store(true)
	c.log = c.log.With("room", link.Room().ID(), "seat", link.Seat())
	c.log.Debug("seated", "resumed", hs.Kind == roomwire.KindResume)
	return true
}

var errTicketUsed = errors.New("node: connect ticket already used")

// seat runs the checks of a parsed handshake and seats p: the room sends
// WELCOME (and, for a resume, the catch-up) to p before it returns. On
// failure it returns the ERROR code to answer. ticketID, when not empty,
// is the id a HELLO's connect ticket must have (node/udp: the key id).
// exempt brackets what the room sends to p inside the handshake.
func (s *Server) seat(hs roomwire.Handshake, ticketID string, p rooms.Peer, exempt func(bool)) (*rooms.Link, uint8, error) {
	var link *rooms.Link
	switch hs.Kind {
	case roomwire.KindHello:
		now := s.cfg.Now()
		t, err := s.cfg.Signer.VerifyConnectTicket(string(hs.Token), now)
		switch {
		case errors.Is(err, tokens.ErrExpired):
			return nil, roomwire.CodeTicketExpired, err
		case err != nil || t.ID == "" || (ticketID != "" && t.ID != ticketID):
			return nil, roomwire.CodeTicketInvalid, errOr(err, errTicketInvalid)
		case !s.tickets.use(t.ID, t.ExpiresMS, now.UnixMilli()):
			return nil, roomwire.CodeTicketExpired, errTicketUsed
		}
		r := s.engine.Room(t.RoomID)
		if r == nil {
			return nil, roomwire.CodeRoomNotFound, errRoomNotHere
		}
		exempt(true) // WELCOME
		link, err = r.Join(t.Seat, t.SessionID, p)
		exempt(false)
		if err != nil {
			return nil, rooms.Code(err), err
		}
	case roomwire.KindResume:
		t, err := s.cfg.Signer.VerifyResumeToken(string(hs.Token))
		if err != nil {
			return nil, roomwire.CodeResumeRejected, err
		}
		r := s.engine.Room(t.RoomID)
		if r == nil {
			return nil, roomwire.CodeRoomNotFound, errRoomNotHere
		}
		exempt(true) // WELCOME and the catch-up, bounded by the retention
		k := rooms.ResumeKey{RoomID: t.RoomID, Seat: t.Seat, SessionID: t.SessionID, Gen: t.Gen}
		now := s.cfg.Now()
		used := k
		link, err = r.Resume(k, hs.Resume.LastFrame, p)
		if errors.Is(err, rooms.ErrResumeRejected) {
			// k's resume may have seated a connection whose WELCOME
			// (and new token) never reached the client: see resumeSuccessors.
			if next, ok := s.resumes.lookup(k, now); ok {
				used = next
				link, err = r.Resume(next, hs.Resume.LastFrame, p)
			}
		}
		exempt(false)
		if err != nil {
			return nil, rooms.Code(err), err
		}
		next := used
		next.Gen++ // a resume moves the seat one generation on (rooms.Room.Resume)
		s.resumes.record(k, next, link, now)
	}
	return link, 0, nil
}

// errOr returns err, or def when err is nil.
func errOr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

var (
	errTicketInvalid = errors.New("node: connect ticket not for this key")
	errRoomNotHere   = errors.New("node: room not on this node")
)

// sealResume is the engine's Config.SealResume: the node signs a resume
// token for k with the deployment's key, and verifies it in [conn.handshake].
func (s *Server) sealResume(k rooms.ResumeKey) []byte {
	t, err := s.cfg.Signer.SignResumeToken(tokens.ResumeToken{RoomID: k.RoomID, Seat: k.Seat, SessionID: k.SessionID, Gen: k.Gen})
	if err != nil {
		s.log.Error("signing a resume token failed; WELCOME carries none", "err", err)
		return nil
	}
	return []byte(t)
}

// reject sends ERROR code and closes the connection.
func (c *conn) reject(code uint8, why error) bool {
	c.log.Debug("handshake rejected", "code", roomwire.CodeName(code), "err", why) // never the token
	m := c.s.engine.ErrorMsg(code, "", nil)
	c.closeWith(m, ws.StatusNormalClosure, discHandshake)
	m.Release()
	return false
}

// ticketCache remembers the ids of used connect tickets until they expire,
// so that each ticket seats one connection.
type ticketCache struct {
	mu   sync.Mutex
	max  int
	seen map[string]struct{}
	exp  expHeap
}

func newTicketCache(n int) *ticketCache {
	return &ticketCache{max: n, seen: make(map[string]struct{})}
}

// use records id, valid until expMS, and reports whether it was unused and
// the cache had room for it.
func (t *ticketCache) use(id string, expMS, nowMS int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.exp) > 0 && t.exp[0].exp <= nowMS {
		delete(t.seen, t.exp[0].id)
		heap.Pop(&t.exp)
	}
	if _, ok := t.seen[id]; ok || len(t.seen) >= t.max {
		return false
	}
	t.seen[id] = struct{}{}
	heap.Push(&t.exp, expEntry{id: id, exp: expMS})
	return true
}

type expEntry struct {
	id  string
	exp int64
}

type expHeap []expEntry

func (h expHeap) Len() int           { return len(h) }
func (h expHeap) Less(i, j int) bool { return h[i].exp < h[j].exp }
func (h expHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expHeap) Push(x any)        { *h = append(*h, x.(expEntry)) }
func (h *expHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
