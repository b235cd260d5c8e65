package p2p

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// sendJumbo sends the encoded envelope env (over MaxRoutedRest bytes) as
// JUMBO fragments, paced at Config.JumboRate bytes per second (divided by
// the number of other peers for a broadcast). One jumbo message is sent at
// a time per peer, so that the pace holds.
func (p *Peer) sendJumbo(ctx context.Context, to string, broadcast bool, env []byte) error {
	if len(env) > p2pwire.MaxJumboSize {
		return fmt.Errorf("p2p: send UDP: the envelope is %d bytes, over the jumbo maximum of %d: %w", len(env), p2pwire.MaxJumboSize, ErrTooLarge)
	}
	u := p.udp
	u.jmu.Lock()
	defer u.jmu.Unlock()
	id := u.jumboID.Add(1)
	if id == 0 {
		id = u.jumboID.Add(1)
	}
	count := p2pwire.JumboCount(len(env))
	frag := p2pwire.Jumbo{MessageID: id, Count: uint16(count), Total: uint32(len(env))}
	buf := make([]byte, 0, p2pwire.MaxRoutedRest+2)
	start := time.Now()
	rate := float64(p.cfg.JumboRate)
	if broadcast {
		// The hub fans each chunk out to every other peer and counts each
		// copy against this peer's datagram rate: keep the copies at the
		// pace one recipient would get.
		rate /= float64(max(1, len(p.Peers())))
	}
	sent := 0
	for i := range count {
		frag.Index = uint16(i)
		frag.Chunk = p2pwire.JumboChunk(env, i)
		b, err := frag.AppendTo(buf[:0]) // direct routing: kind, flags 0, then the fields
		if err != nil {
			return fmt.Errorf("p2p: send jumbo: %w", err)
		}
		rest := b[2:]
		if broadcast {
			err = p.broadcastDatagram(p2pwire.KindJumbo, rest)
		} else {
			_, err = p.sendDatagram(to, p2pwire.KindJumbo, rest)
		}
		if err != nil {
			return fmt.Errorf("p2p: send jumbo chunk %d of %d: %w", i, count, err)
		}
		sent += len(frag.Chunk)
		// Pace: chunk i may leave at start + sent/rate. Sleep only when
		// more than a millisecond ahead, so timers stay coarse.
		if ahead := time.Duration(float64(sent)/rate*float64(time.Second)) - time.Since(start); ahead > time.Millisecond {
			t := time.NewTimer(ahead)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("p2p: send jumbo: stopped after %d of %d chunks: %w", i+1, count, ctx.Err())
			case <-p.closing:
				t.Stop()
				return closedErr(p.Err())
			}
		}
	}
	u.c.jumboSent.Add(1)
	return nil
}

// reassembler puts jumbo messages back together, for the UDP reader and
// any direct TCP path's reader (hence its lock). Memory is bounded per sender (Config.JumboMemory,
// counting each incomplete message at its full size from its first
// fragment) and in total (Config.JumboTotalMemory); a message silent for
// Config.JumboTimeout is dropped.
type reassembler struct {
	mu             sync.Mutex // add and sweep: a direct TCP path's reader may call add too
	perPeer, total int
	timeout        time.Duration
	used           int
	bySender       map[string]*senderJumbo
	lastSweep      time.Time
}

type senderJumbo struct {
	used int
	msgs map[uint32]*jumboMsg
}

type jumboMsg struct {
	count, got int
	total      int
	broadcast  bool
	path       Path
	have       []uint64 // bit i: chunk i arrived
	buf        []byte
	last       time.Time // the last new chunk
}

func (r *reassembler) init(c Config) {
	r.perPeer, r.total, r.timeout = c.JumboMemory, c.JumboTotalMemory, c.JumboTimeout
	r.bySender = map[string]*senderJumbo{}
}

// add takes one JUMBO fragment.
func (r *reassembler) add(p *Peer, in *inDatagram, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &p.udp.c
	var f p2pwire.Jumbo
	// Re-attach a direct routing header so the codec checks the fields.
	var hdr [2 + p2pwire.MaxRoutedRest]byte
	hdr[0] = byte(p2pwire.KindJumbo)
	n := copy(hdr[2:], in.Rest)
	if f.Unmarshal(hdr[:2+n]) != nil {
		c.dropMalformed.Add(1)
		return
	}
	s := r.bySender[in.From]
	if s == nil {
		s = &senderJumbo{msgs: map[uint32]*jumboMsg{}}
		r.bySender[in.From] = s
	}
	m := s.msgs[f.MessageID]
	if m == nil {
		size := int(f.Total)
		if s.used+size > r.perPeer || r.used+size > r.total {
			c.jumboMem.Add(1)
			return
		}
		m = &jumboMsg{count: int(f.Count), total: size, broadcast: in.Broadcast, path: in.Path,
			have: make([]uint64, (int(f.Count)+63)/64), buf: make([]byte, size), last: now}
		s.msgs[f.MessageID] = m
		s.used += size
		r.used += size
	}
	if int(f.Count) != m.count || int(f.Total) != m.total {
		// Drop the fragment, not the message: dropping it would let the
		// sender have a full buffer allocated again by its next fragment,
		// up to 16 MB for each pair of 1 KB datagrams.
		c.jumboBad.Add(1)
		return
	}
	i := int(f.Index)
	if m.have[i/64]&(1<<(i%64)) != 0 {
		return // a duplicate chunk
	}
	m.have[i/64] |= 1 << (i % 64)
	m.got++
	m.last = now
	copy(m.buf[i*p2pwire.JumboChunkSize:], f.Chunk)
	if m.got < m.count {
		return
	}
	r.drop(in.From, s, f.MessageID, m)
	var e p2pwire.Envelope
	if e.Unmarshal(m.buf) != nil {
		c.jumboBad.Add(1)
		return
	}
	c.jumboRecv.Add(1)
	// The payload aliases m.buf, which is no longer the reassembler's.
	p.deliverUDP(&Message{From: in.From, Broadcast: m.broadcast, UDP: true, Path: m.path, p: p,
		Envelope: Envelope{Header: e.Header, Pairs: e.Pairs, Payload: e.Payload}})
}

// drop forgets message id of a sender.
func (r *reassembler) drop(from string, s *senderJumbo, id uint32, m *jumboMsg) {
	delete(s.msgs, id)
	s.used -= m.total
	r.used -= m.total
	if len(s.msgs) == 0 {
		delete(r.bySender, from)
	}
}

// sweep drops the messages silent for the timeout, at most every 100 ms.
func (r *reassembler) sweep(p *Peer, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.lastSweep) < 100*time.Millisecond || r.used == 0 {
		return
	}
	r.lastSweep = now
	for from, s := range r.bySender {
		for id, m := range s.msgs {
			if now.Sub(m.last) >= r.timeout {
				p.udp.c.jumboTimeout.Add(1)
				r.drop(from, s, id, m)
			}
		}
	}
}
