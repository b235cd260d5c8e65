package rooms

import (
	"sync"
	"sync/atomic"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// Headroom is the number of bytes reserved in front of every outgoing
// message for a transport's frame header (see [Config.Header]).
const Headroom = 16

// Msg is one encoded outgoing im.game.v1 message, shared by every peer it is
// sent to. It is reference counted: whoever keeps it past the call that
// handed it over calls [Msg.Retain], and [Msg.Release] once done with it; the
// last release returns the buffer to its engine's pool. The bytes never
// change between the first Send and the last Release.
type Msg struct {
	refs  atomic.Int32
	class int8 // size class in pools, -1 when not pooled
	start int  // index in buf of the first byte of Wire
	buf   []byte
	pools *msgPools
}

// Payload returns the im.game.v1 message, type byte first.
func (m *Msg) Payload() []byte { return m.buf[Headroom:] }

// Wire returns the message with the transport header written by
// [Config.Header] in front of it: the bytes to put on a stream connection.
func (m *Msg) Wire() []byte { return m.buf[m.start:] }

// Type returns the message's type byte.
func (m *Msg) Type() roomwire.Type { return roomwire.Type(m.buf[Headroom]) }

// Retain takes another reference to m.
func (m *Msg) Retain() { m.refs.Add(1) }

// Release drops a reference to m. After the last one the message must not be
// touched again.
func (m *Msg) Release() {
	switch n := m.refs.Add(-1); {
	case n > 0:
	case n == 0:
		m.pools.put(m)
	default:
		panic("rooms: Msg released more often than retained")
	}
}

// Size classes of pooled message buffers (payload bytes). FRAME messages of
// small rooms fit the first; a full FRAME_BATCH of a 16-seat room with
// 128-byte inputs is about 626 KB, the last.
var classSizes = [...]int{256, 1 << 10, 4 << 10, 16 << 10, 80 << 10, 256 << 10, 640 << 10}

// msgPools hands out message buffers by size class. It belongs to one Engine.
type msgPools struct {
	header func(headroom []byte, n int) int
	pools  [len(classSizes)]sync.Pool
}

func newMsgPools(header func([]byte, int) int) *msgPools {
	p := &msgPools{header: header}
	for i := range p.pools {
		size := classSizes[i]
		class := int8(i)
		p.pools[i].New = func() any {
			return &Msg{class: class, buf: make([]byte, Headroom, Headroom+size), pools: p}
		}
	}
	return p
}

// get returns a message with one reference whose buffer holds at least n
// payload bytes without growing. Its payload is empty.
func (p *msgPools) get(n int) *Msg {
	var m *Msg
	for i, size := range classSizes {
		if n <= size {
			m = p.pools[i].Get().(*Msg)
			break
		}
	}
	if m == nil {
		m = &Msg{class: -1, buf: make([]byte, Headroom, Headroom+n), pools: p}
	}
	m.buf = m.buf[:Headroom]
	m.refs.Store(1)
	return m
}

func (p *msgPools) put(m *Msg) {
	if m.class < 0 || cap(m.buf) < Headroom+classSizes[m.class] {
		return
	}
	p.pools[m.class].Put(m)
}

// seal writes the transport header in front of the payload. It is called
// once, before the message is shared.
func (p *msgPools) seal(m *Msg) {
	m.start = Headroom
	if p.header != nil {
		m.start -= p.header(m.buf[:Headroom], len(m.buf)-Headroom)
	}
}

// encode returns a sealed message holding msg, with one reference.
func (p *msgPools) encode(msg roomwire.Message, sizeHint int) (*Msg, error) {
	m := p.get(sizeHint)
	b, err := msg.AppendTo(m.buf)
	if err != nil {
		m.Release()
		return nil, err
	}
	m.buf = b
	p.seal(m)
	return m, nil
}
