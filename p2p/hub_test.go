package p2p

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
	"github.com/switchboardgg/switchboard/tokens"
)

func TestDiscoveryAndEvents(t *testing.T) {
	th := startHub(t, nil)
	alice, set := th.join("alice", "lobby")
	if len(set.Peers) != 0 || alice.welcome.Network != "lobby" || !strings.HasPrefix(string(alice.id()), "alice~") {
		t.Fatalf("first peer: set %v, welcome %v", set.Peers, alice.welcome)
	}
	if alice.welcome.ResumeWindowMS != uint32(DefaultResumeWindow/time.Millisecond) || len(alice.welcome.ResumeToken) == 0 {
		t.Fatalf("welcome offers no resume: %v", alice.welcome)
	}
	bob, set := th.join("bob", "lobby")
	if !slices.Equal(set.Peers, []p2pwire.PeerID{alice.id()}) {
		t.Fatalf("bob's set %v, want [%s]", set.Peers, alice.id())
	}
	ev := expect[*p2pwire.PeerEvents](alice)
	if len(ev.Events) != 1 || ev.Events[0] != (p2pwire.PeerEvent{Op: p2pwire.PeerJoined, Peer: bob.id()}) || ev.Version <= 0 {
		t.Fatalf("alice's events %+v", ev)
	}
	// A peer on another network is not seen.
	carol, set := th.join("carol", "other")
	if len(set.Peers) != 0 {
		t.Fatalf("carol sees %v", set.Peers)
	}
	bob.send(&p2pwire.Goodbye{})
	ev2 := expect[*p2pwire.PeerEvents](alice)
	if len(ev2.Events) != 1 || ev2.Events[0] != (p2pwire.PeerEvent{Op: p2pwire.PeerLeft, Peer: bob.id()}) || ev2.Version <= ev.Version {
		t.Fatalf("alice's events after goodbye %+v (before: version %d)", ev2, ev.Version)
	}
	carol.ping(1)
	if l := th.h.Load(); l.Peers != 2 || l.Networks != 2 {
		t.Fatalf("load %+v", l)
	}
	if got := th.h.Peers("lobby"); !slices.Equal(got, []string{string(alice.id())}) {
		t.Fatalf("Peers: %v", got)
	}
}

func TestMessagesAndRequestResponse(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)

	alice.send(&p2pwire.Msg{Route: p2pwire.Route{To: bob.id()}, Envelope: p2pwire.Envelope{
		Header: "chat", Pairs: []p2pwire.Pair{{Key: "k", Value: "v"}}, Payload: []byte("hello"),
	}})
	m := expect[*p2pwire.Msg](bob)
	if m.From != alice.id() || m.To != "" || m.Broadcast || m.Header != "chat" || string(m.Payload) != "hello" || len(m.Pairs) != 1 {
		t.Fatalf("bob got %+v", m)
	}
	// A peer cannot speak as another: from is the hub's.
	alice.send(&p2pwire.Request{Route: p2pwire.Route{To: bob.id()}, Envelope: p2pwire.Envelope{MessageID: 42, Payload: []byte("ping?")}})
	req := expect[*p2pwire.Request](bob)
	if req.From != alice.id() || req.MessageID != 42 {
		t.Fatalf("bob got request %+v", req)
	}
	bob.send(&p2pwire.Response{Route: p2pwire.Route{To: req.From}, Envelope: p2pwire.Envelope{MessageID: req.MessageID, Payload: []byte("pong!")}})
	resp := expect[*p2pwire.Response](alice)
	if resp.From != bob.id() || resp.MessageID != 42 || string(resp.Payload) != "pong!" {
		t.Fatalf("alice got response %+v", resp)
	}
	// A message larger than the reader's buffer (32 KiB) goes through whole.
	big := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16)
	alice.send(msgTo(bob.id(), "big", big))
	if m := expect[*p2pwire.Msg](bob); !bytes.Equal(m.Payload, big) || m.Header != "big" {
		t.Fatalf("big message: %d bytes, header %q", len(m.Payload), m.Header)
	}
	// Many messages in one go arrive in order (the writer coalesces).
	var frames []byte
	for i := range 500 {
		var p [4]byte
		binary.BigEndian.PutUint32(p[:], uint32(i))
		frames, _ = p2pwire.AppendMessageFrame(frames, msgTo(bob.id(), "", p[:]))
	}
	alice.sendRaw(frames)
	for i := range 500 {
		m := expect[*p2pwire.Msg](bob)
		if binary.BigEndian.Uint32(m.Payload) != uint32(i) {
			t.Fatalf("message %d: got %d", i, binary.BigEndian.Uint32(m.Payload))
		}
	}
	alice.ping(1) // the reader counts per batch, before it reads the PING
	var routed dto.Metric
	if err := th.h.m.routed.Write(&routed); err != nil || routed.GetCounter().GetValue() != 504 {
		t.Fatalf("routed counter %v (%v), want 504", routed.GetCounter().GetValue(), err)
	}
}

func TestBroadcast(t *testing.T) {
	th := startHub(t, nil)
	var peers []*client
	for i, u := range []string{"a", "b", "c", "d"} {
		c, _ := th.join(u, "lobby")
		for _, q := range peers {
			expect[*p2pwire.PeerEvents](q)
		}
		_ = i
		peers = append(peers, c)
	}
	other, _ := th.join("x", "elsewhere")
	peers[0].send(&p2pwire.Msg{Route: p2pwire.Route{Broadcast: true}, Envelope: p2pwire.Envelope{Payload: []byte("all")}})
	for _, q := range peers[1:] {
		m := expect[*p2pwire.Msg](q)
		if !m.Broadcast || m.From != peers[0].id() || string(m.Payload) != "all" {
			t.Fatalf("%s got %+v", q.id(), m)
		}
	}
	// Neither the sender nor another network's peer gets it.
	peers[0].ping(7)
	other.ping(8)
	// REQUEST cannot be broadcast: the wire refuses it (bad_flags) and the
	// hub closes the stream as malformed.
	body := []byte{byte(p2pwire.KindRequest), p2pwire.FlagBroadcast, p2pwire.EnvMessageID, 0, 0, 0, 0, 0, 0, 0, 1}
	frame, _ := p2pwire.AppendFrame(nil, body)
	peers[1].sendRaw(frame)
	peers[1].expectError(p2pwire.CodeMalformed, true)
	peers[1].expectClosed()
	peers[2].ping(9)
}

func TestUnknownPeerAndOtherNetwork(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	carol, _ := th.join("carol", "other")
	carol.send(&p2pwire.Request{Route: p2pwire.Route{To: alice.id()}, Envelope: p2pwire.Envelope{MessageID: 9}})
	e := carol.expectError(p2pwire.CodeUnknownPeer, false)
	if e.MessageID != 9 || e.Peer != alice.id() {
		t.Fatalf("error %+v", e)
	}
	carol.send(msgTo("nobody~1", "", nil))
	if e := carol.expectError(p2pwire.CodeUnknownPeer, false); e.MessageID != 0 || e.Peer != "nobody~1" {
		t.Fatalf("error %+v", e)
	}
	carol.ping(1)
	alice.ping(2) // alice got nothing but her PONG
}

func TestBadInput(t *testing.T) {
	th := startHub(t, func(c *Config) { c.MaxFrameSize = 8 << 10; c.HelloTimeout = 300 * time.Millisecond })
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)

	hello := func(ticket []byte) *client {
		c := th.dial()
		c.send(&p2pwire.Hello{Ticket: ticket})
		return c
	}
	t.Run("forged ticket", func(t *testing.T) {
		tk := th.ticket("mallory", "lobby")
		tk[len(tk)-2] ^= 1
		c := hello(tk)
		c.expectError(p2pwire.CodeUnauthorized, true)
		c.expectClosed()
	})
	t.Run("another deployment's ticket", func(t *testing.T) {
		other, _ := tokens.NewHubKeyring(tokens.HubKey{ID: 1, Secret: bytes.Repeat([]byte{8}, 32)})
		now := time.Now()
		s, _ := other.Seal(tokens.HubTicket{Username: "m", Network: "lobby", PeerID: "m~1", HubID: testHubID, Issued: now, Expires: now.Add(time.Minute)})
		hello([]byte(s)).expectError(p2pwire.CodeUnauthorized, true)
	})
	t.Run("another hub's ticket", func(t *testing.T) {
		now := time.Now()
		s, _ := th.keys.Seal(tokens.HubTicket{Username: "m", Network: "lobby", PeerID: "m~1", HubID: "hub-other", Issued: now, Expires: now.Add(time.Minute)})
		hello([]byte(s)).expectError(p2pwire.CodeUnauthorized, true)
	})
	t.Run("expired ticket", func(t *testing.T) {
		now := time.Now().Add(-time.Hour)
		s, _ := th.keys.Seal(tokens.HubTicket{Username: "m", Network: "lobby", PeerID: "m~1", HubID: testHubID, Issued: now, Expires: now.Add(time.Minute)})
		hello([]byte(s)).expectError(p2pwire.CodeUnauthorized, true)
	})
	t.Run("anonymous without allow-anonymous", func(t *testing.T) {
		hello([]byte(AnonymousPrefix+"lobby")).expectError(p2pwire.CodeUnauthorized, true)
	})
	t.Run("unknown resume token", func(t *testing.T) {
		c := th.dial()
		c.send(&p2pwire.Hello{ResumeToken: []byte("not-a-token")})
		c.expectError(p2pwire.CodeUnauthorized, true)
	})
	t.Run("first frame not HELLO", func(t *testing.T) {
		c := th.dial()
		c.send(&p2pwire.Ping{Value: 1})
		c.expectError(p2pwire.CodeMalformed, true)
	})
	t.Run("no HELLO in time", func(t *testing.T) {
		c := th.dial()
		c.expectError(p2pwire.CodeTimeout, true)
		c.expectClosed()
	})
	t.Run("garbage before HELLO", func(t *testing.T) {
		c := th.dial()
		c.sendRaw([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3})
		c.expectError(p2pwire.CodeMalformed, true)
	})
	t.Run("malformed routing header", func(t *testing.T) {
		c, _ := th.join("m1", "lobby")
		frame, _ := p2pwire.AppendFrame(nil, []byte{byte(p2pwire.KindMessage), p2pwire.FlagTo, 0})
		c.sendRaw(frame)
		c.expectError(p2pwire.CodeMalformed, true)
		c.expectClosed()
	})
	t.Run("unknown kind", func(t *testing.T) {
		c, _ := th.join("m2", "lobby")
		frame, _ := p2pwire.AppendFrame(nil, []byte{0x7f, 0})
		c.sendRaw(frame)
		c.expectError(p2pwire.CodeMalformed, true)
		c.expectClosed()
	})
	t.Run("oversized frame", func(t *testing.T) {
		c, _ := th.join("m3", "lobby")
		c.sendRaw(binary.BigEndian.AppendUint32(nil, 8<<10+1))
		c.expectError(p2pwire.CodeTooLarge, true)
		c.expectClosed()
	})
	t.Run("from set", func(t *testing.T) {
		c, _ := th.join("m4", "lobby")
		body := []byte{byte(p2pwire.KindMessage), p2pwire.FlagFrom, 5, 'a', 'l', 'i', 'c', 'e', 0}
		frame, _ := p2pwire.AppendFrame(nil, body)
		c.sendRaw(frame)
		c.expectError(p2pwire.CodeForbidden, false)
		c.ping(3)
	})
	t.Run("hub-only kind", func(t *testing.T) {
		c, _ := th.join("m5", "lobby")
		c.send(&p2pwire.PeerSet{Version: 1})
		c.expectError(p2pwire.CodeForbidden, false)
		c.ping(4)
	})
	// Through all that, alice and bob were unaffected (apart from the join
	// and leave events of the short-lived peers).
	alice.send(msgTo(bob.id(), "", []byte("still here")))
	for {
		m, err := bob.read()
		if err != nil {
			t.Fatal(err)
		}
		if msg, ok := m.(*p2pwire.Msg); ok {
			if string(msg.Payload) != "still here" {
				t.Fatalf("bob got %q", msg.Payload)
			}
			break
		}
		if _, ok := m.(*p2pwire.PeerEvents); !ok {
			t.Fatalf("bob got %s", describe(m))
		}
	}
}

func TestAnonymous(t *testing.T) {
	th := startHub(t, func(c *Config) { c.AllowAnonymous = true })
	c := th.dial()
	c.send(&p2pwire.Hello{Ticket: []byte(AnonymousPrefix + "lobby")})
	w := expect[*p2pwire.Welcome](c)
	if w.Network != "lobby" || w.PeerID.Username() != "anonymous" {
		t.Fatalf("welcome %v", w)
	}
	expect[*p2pwire.PeerSet](c)
}

func TestFloodIsRateLimited(t *testing.T) {
	th := startHub(t, func(c *Config) { c.PeerMessageRate = 20 })
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	var frames []byte
	for i := range 100 {
		frames, _ = p2pwire.AppendMessageFrame(frames, &p2pwire.Msg{Route: p2pwire.Route{To: bob.id()}, Envelope: p2pwire.Envelope{MessageID: uint64(i + 1)}})
	}
	alice.sendRaw(frames)
	limited := 0
	for limited < 100-20 {
		e := alice.expectError(p2pwire.CodeRateLimited, false)
		if e.MessageID == 0 {
			t.Fatalf("rate_limited without the message id")
		}
		limited++
	}
	alice.ping(1) // still connected
	got := 0
	for got < 20 {
		expect[*p2pwire.Msg](bob)
		got++
	}
	bob.ping(2) // and no more than the burst arrived
}

func TestQuotaExceeded(t *testing.T) {
	th := startHub(t, func(c *Config) { c.PeerBandwidth = 1000; c.PeerMessageRate = -1 })
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	alice.send(&p2pwire.Msg{Route: p2pwire.Route{To: bob.id()}, Envelope: p2pwire.Envelope{MessageID: 1, Payload: make([]byte, 900)}})
	alice.send(&p2pwire.Msg{Route: p2pwire.Route{To: bob.id()}, Envelope: p2pwire.Envelope{MessageID: 2, Payload: make([]byte, 900)}})
	if e := alice.expectError(p2pwire.CodeQuotaExceeded, false); e.MessageID != 2 {
		t.Fatalf("error %+v", e)
	}
	if m := expect[*p2pwire.Msg](bob); m.MessageID != 1 {
		t.Fatalf("bob got %+v", m)
	}
}

func TestNetworkFull(t *testing.T) {
	th := startHub(t, func(c *Config) { c.MaxPeersPerNetwork = 2 })
	th.join("a", "lobby")
	th.join("b", "lobby")
	c := th.dial()
	c.send(&p2pwire.Hello{Ticket: th.ticket("c", "lobby")})
	c.expectError(p2pwire.CodeNetworkFull, true)
	th.join("c", "another") // other networks are not full
}

func TestSlowPeerDropped(t *testing.T) {
	th := startHub(t, func(c *Config) {
		c.MaxFrameSize = 8 << 10
		c.SendQueueBytes = 64 << 10
		c.PeerMessageRate, c.PeerBandwidth, c.NetworkBandwidth = -1, -1, -1
	})
	alice, _ := th.join("alice", "lobby")
	carol, _ := th.join("carol", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	slow := th.dial()
	_ = slow.nc.NetConn().(interface{ SetReadBuffer(int) error }).SetReadBuffer(4 << 10)
	slow.send(&p2pwire.Hello{Ticket: th.ticket("slow", "lobby")})
	slow.welcome = expect[*p2pwire.Welcome](slow)
	expect[*p2pwire.PeerSet](slow)
	expect[*p2pwire.PeerEvents](alice)
	expect[*p2pwire.PeerEvents](carol)

	// alice floods the peer that never reads, 8 KiB at a time, and checks
	// between bursts that carol is served; the hub drops the slow peer.
	payload := make([]byte, 8000)
	var burst []byte
	for range 64 {
		burst, _ = p2pwire.AppendMessageFrame(burst, msgTo(slow.welcome.PeerID, "", payload))
	}
	for i := 0; ; i++ {
		if i == 2000 {
			t.Fatal("the slow peer was never dropped")
		}
		alice.sendRaw(burst)
		alice.send(msgTo(carol.id(), "", []byte{byte(i)}))
		m := nextMsg(t, carol)
		if m.Payload[0] != byte(i) {
			t.Fatalf("carol got %d, want %d", m.Payload[0], byte(i))
		}
		if th.h.Load().Peers == 2 {
			break
		}
	}
	ev := expect[*p2pwire.PeerEvents](alice)
	if ev.Events[0] != (p2pwire.PeerEvent{Op: p2pwire.PeerLeft, Peer: slow.welcome.PeerID}) {
		t.Fatalf("alice's events %+v", ev)
	}
	alice.ping(1)
}

func TestResume(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)

	_ = bob.nc.NetConn().Close() // the connection is lost, no GOODBYE
	waitDetached(t, th.h, "lobby", string(bob.id()))
	// While bob is away, a message to him waits (no unknown_peer).
	alice.send(msgTo(bob.id(), "", []byte("while away")))
	alice.ping(1)

	back := th.dial()
	back.send(&p2pwire.Hello{ResumeToken: bob.welcome.ResumeToken})
	w := expect[*p2pwire.Welcome](back)
	if !w.Resumed || w.PeerID != bob.id() || bytes.Equal(w.ResumeToken, bob.welcome.ResumeToken) {
		t.Fatalf("resumed welcome %v", w)
	}
	if set := expect[*p2pwire.PeerSet](back); !slices.Equal(set.Peers, []p2pwire.PeerID{alice.id()}) {
		t.Fatalf("set after resume %v", set.Peers)
	}
	if m := expect[*p2pwire.Msg](back); string(m.Payload) != "while away" {
		t.Fatalf("got %q", m.Payload)
	}
	// alice saw no leave: the next thing she gets is bob's message.
	back.send(msgTo(alice.id(), "", []byte("back")))
	if m := expect[*p2pwire.Msg](alice); string(m.Payload) != "back" || m.From != bob.id() {
		t.Fatalf("alice got %+v", m)
	}
	// The old token was used up.
	again := th.dial()
	again.send(&p2pwire.Hello{ResumeToken: bob.welcome.ResumeToken})
	again.expectError(p2pwire.CodeUnauthorized, true)
}

func TestResumeWindowExpires(t *testing.T) {
	th := startHub(t, func(c *Config) { c.ResumeWindow = 50 * time.Millisecond })
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	_ = bob.nc.NetConn().Close()
	ev := expect[*p2pwire.PeerEvents](alice)
	if ev.Events[0] != (p2pwire.PeerEvent{Op: p2pwire.PeerLeft, Peer: bob.id()}) {
		t.Fatalf("events %+v", ev)
	}
	c := th.dial()
	c.send(&p2pwire.Hello{ResumeToken: bob.welcome.ResumeToken})
	c.expectError(p2pwire.CodeUnauthorized, true)
}

func TestKickAndShutdown(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	bob, _ := th.join("bob", "lobby")
	expect[*p2pwire.PeerEvents](alice)
	if !th.h.Kick("lobby", string(bob.id())) {
		t.Fatal("kick: not found")
	}
	bob.expectError(p2pwire.CodeKicked, true)
	bob.expectClosed()
	if ev := expect[*p2pwire.PeerEvents](alice); ev.Events[0].Op != p2pwire.PeerLeft {
		t.Fatalf("events %+v", ev)
	}
}

// TestRouteAllocatesNothing: what the hub does per routed message — decode
// the routing header, look the destination up, stamp and queue — allocates
// nothing.
func TestRouteAllocatesNothing(t *testing.T) {
	th := startHub(t, func(c *Config) { c.PeerMessageRate, c.PeerBandwidth, c.NetworkBandwidth = -1, -1, -1 })
	h := th.h
	n := &network{name: "lobby", peers: map[string]*peer{}}
	n.bw.b = newBucket(-1)
	mk := func(id string) *peer {
		p := &peer{id: id, idb: []byte(id), net: n, out: make([]byte, 0, 4096)}
		p.cond.L = &p.mu
		n.peers[id] = p
		return p
	}
	a, b := mk("alice~1"), mk("bob~2")
	c := &conn{h: h, p: a, rate: newBucket(-1), bw: newBucket(-1)}
	body, _ := p2pwire.Append(nil, msgTo("bob~2", "", make([]byte, 32)))
	bc, _ := p2pwire.Append(nil, &p2pwire.Msg{Route: p2pwire.Route{Broadcast: true}, Envelope: p2pwire.Envelope{Payload: make([]byte, 32)}})
	now := time.Now().UnixNano()
	allocs := testing.AllocsPerRun(1000, func() {
		r, err := p2pwire.DecodeRouting(body)
		if err != nil {
			t.Fatal(err)
		}
		h.route(c, &r, body, now)
		r, _ = p2pwire.DecodeRouting(bc)
		h.route(c, &r, bc, now)
		b.out = b.out[:0]
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per routed message", allocs)
	}
}

// nextMsg reads c's next MESSAGE, skipping peer events.
func nextMsg(t *testing.T, c *client) *p2pwire.Msg {
	t.Helper()
	for {
		m, err := c.read()
		if err != nil {
			t.Fatal(err)
		}
		switch v := m.(type) {
		case *p2pwire.Msg:
			return v
		case *p2pwire.PeerEvents, *p2pwire.Pong:
		default:
			t.Fatalf("got %s", describe(m))
		}
	}
}

// waitDetached waits until the hub has seen id's connection end.
func waitDetached(t *testing.T, h *Hub, network, id string) {
	t.Helper()
	for range 1000 {
		h.mu.Lock()
		n := h.networks[network]
		h.mu.Unlock()
		n.mu.RLock()
		p := n.peers[id]
		n.mu.RUnlock()
		p.mu.Lock()
		detached := p.cur == nil
		p.mu.Unlock()
		if detached {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never detached", id)
}

// TestEventsCoalesce: what a peer has not been sent yet is coalesced — a
// peer that joined and left in between is not mentioned, one that left and
// came back neither — and the events go out sorted with the last version.
func TestEventsCoalesce(t *testing.T) {
	q := &peer{id: "q~1"}
	q.cond.L = &q.mu
	q.addEvent("b~1", p2pwire.PeerJoined, 1)
	q.addEvent("a~1", p2pwire.PeerJoined, 2)
	q.addEvent("b~1", p2pwire.PeerLeft, 3)
	q.addEvent("c~1", p2pwire.PeerLeft, 4)
	q.addEvent("c~1", p2pwire.PeerJoined, 5)
	q.addEvent("d~1", p2pwire.PeerLeft, 6)
	frame := appendEvents(nil, q)
	m, err := p2pwire.Decode(frame[p2pwire.FrameHeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	ev := m.(*p2pwire.PeerEvents)
	want := []p2pwire.PeerEvent{{Op: p2pwire.PeerJoined, Peer: "a~1"}, {Op: p2pwire.PeerLeft, Peer: "d~1"}}
	if ev.Version != 6 || !slices.Equal(ev.Events, want) {
		t.Fatalf("events %+v", ev)
	}
	if len(q.events) != 0 {
		t.Fatalf("events left: %v", q.events)
	}
}

// TestGarbageAfterHello: random bytes after HELLO end that connection (or
// are refused) and nobody else notices.
func TestGarbageAfterHello(t *testing.T) {
	th := startHub(t, nil)
	alice, _ := th.join("alice", "lobby")
	for seed := range 5 {
		c, _ := th.join(fmt.Sprintf("g%d", seed), "lobby")
		garbage := make([]byte, 4096)
		for i := range garbage {
			garbage[i] = byte(i*131 + seed*17 + i*i)
		}
		c.sendRaw(garbage)
		for {
			m, err := c.read()
			if err != nil {
				break // closed
			}
			if e, ok := m.(*p2pwire.Error); ok && e.Closing {
				continue
			}
		}
	}
	alice.ping(1)
	// The hub removes a peer once its reader has ended, just after the
	// close the client saw.
	for i := 0; !slices.Equal(th.h.Peers("lobby"), []string{string(alice.id())}); i++ {
		if i == 1000 {
			t.Fatalf("peers %v", th.h.Peers("lobby"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
