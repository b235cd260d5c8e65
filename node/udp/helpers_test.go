package udp_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/backbone"
	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/node"
	"github.com/switchboardgg/switchboard/node/udp"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/store"
	"github.com/switchboardgg/switchboard/tokens"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine))
}

var discard = slog.New(slog.DiscardHandler)

// env is a game node with its UDP transport on 127.0.0.1, real NATS and
// store behind it.
type env struct {
	t      *testing.T
	signer *tokens.Signer
	secret [32]byte
	bb     *backbone.Conn
	db     *store.DB
	udp    *udp.Server
	addr   *net.UDPAddr
	reg    *prometheus.Registry
}

func newEnv(t *testing.T) *env { return newEnvWith(t, nil) }

// newEnvWith is newEnv with tweak applied to the UDP transport's Config.
func newEnvWith(t *testing.T, tweak func(*udp.Config)) *env {
	t.Helper()
	e := &env{t: t, reg: prometheus.NewRegistry()}
	emb, err := backbone.StartEmbedded(backbone.EmbeddedConfig{DataDir: t.TempDir(), Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	ctx := context.Background()
	e.bb, err = backbone.Connect(ctx, backbone.Config{URL: emb.ClientURL(), CredentialsFile: emb.CredentialsFile(), Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.bb.Close() })
	if e.db, err = store.Open(ctx, e.bb, store.Config{Logger: discard}); err != nil {
		t.Fatal(err)
	}
	key, err := e.db.SigningKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.signer, err = tokens.NewSigner(key); err != nil {
		t.Fatal(err)
	}
	e.secret = roomudp.Secret(key)

	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	e.addr = pc.LocalAddr().(*net.UDPAddr)
	srv, err := node.New(node.Config{ID: "node-test", Logger: discard, DB: e.db, Backbone: e.bb, Signer: e.signer, UDPAddr: e.addr.String(), Registerer: e.reg})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	ucfg := udp.Config{Node: srv, Signer: e.signer, Logger: discard, Registerer: e.reg}
	if tweak != nil {
		tweak(&ucfg)
	}
	e.udp, err = udp.New(ucfg)
	if err != nil {
		t.Fatal(err)
	}
	udpServed := make(chan error, 1)
	go func() { udpServed <- e.udp.Serve(pc) }()
	t.Cleanup(func() {
		if err := e.udp.Close(); err != nil {
			t.Errorf("udp Close: %v", err)
		}
		if err := <-udpServed; !errors.Is(err, udp.ErrClosed) {
			t.Errorf("udp Serve: %v", err)
		}
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		<-served
	})
	waitFor(t, "registry entry", func() bool {
		n, err := e.db.GetNode(context.Background(), "node-test")
		return err == nil && n.UDPAddr == e.addr.String()
	})
	return e
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	for range 1000 {
		if f() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s after 10 s", what)
}

// admit creates room id (one seat, frame sync) and admits session "sess-0".
func (e *env) admit(id string, players int) {
	e.t.Helper()
	ctx := context.Background()
	rec := &store.Room{
		RoomID: id, Status: store.StatusOpen, State: store.StateWaiting,
		SyncMode: store.SyncFrame, TickRate: 30, MaxPlayers: players, StartMode: store.StartAuto,
		Access: store.AccessTicket, ReconnectWindowSeconds: 60, MaxDurationSeconds: 3600,
		CreatedAt: time.Now().UTC(), NodeID: "node-test",
	}
	if err := e.db.CreateRoom(ctx, rec); err != nil {
		e.t.Fatal(err)
	}
	for seat := range players {
		req := &store.AdmitRequest{Settings: rec.Settings(), Seat: seat, Username: fmt.Sprintf("user%d", seat), SessionID: fmt.Sprintf("sess-%d", seat)}
		if _, err := e.db.UpdateRoom(ctx, id, func(r *store.Room) error {
			r.PutSeat(store.Seat{Seat: seat, Username: req.Username, SessionID: req.SessionID, Status: store.SeatJoined, JoinedAt: time.Now().UTC()})
			return nil
		}); err != nil {
			e.t.Fatal(err)
		}
		if _, err := store.SendCommand(ctx, e.bb, "node-test", store.VerbAdmit, req); err != nil {
			e.t.Fatalf("admit: %v", err)
		}
	}
}

// playing admits a one-seat room id and returns a client seated in it
// over UDP: its HELLO answered with a WELCOME and a PING with a PONG.
func (e *env) playing(t *testing.T, id string) *client {
	t.Helper()
	e.admit(id, 1)
	tk, kid, sk := e.ticket(id, 0)
	c := e.newClient(kid, sk)
	c.handshake(helloBytes(t, tk))
	c.pingPong()
	return c
}

// ticket signs a connect ticket for seat of room, and returns it with the
// session key control would hand out (C1).
func (e *env) ticket(room string, seat int) (string, roomudp.KeyID, [32]byte) {
	e.t.Helper()
	id := tokens.NewID()
	tk, err := e.signer.SignConnectTicket(tokens.ConnectTicket{
		RoomID: room, Seat: seat, Username: fmt.Sprintf("user%d", seat), SessionID: fmt.Sprintf("sess-%d", seat),
		ClientSessionID: "client-session-1", ExpiresMS: time.Now().Add(time.Minute).UnixMilli(), ID: id,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	kid, err := roomudp.ParseKeyID(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return tk, kid, roomudp.SessionKey(&e.secret, kid)
}

// counter reads a counter (or gauge) of the UDP transport's registry.
func (e *env) counter(name string, labels ...string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

func hasLabel(m *dto.Metric, k, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == k && l.GetValue() == v {
			return true
		}
	}
	return false
}

// client is a minimal UDP client of the protocol, as a third party would
// write it from rooms-udp.md: its own socket, keys, KCP conversation.
type client struct {
	t      *testing.T
	pc     *net.UDPConn
	to     *net.UDPAddr
	sk     [32]byte
	kid    roomudp.KeyID
	nonce  [16]byte
	hsSeal *sealed.Sealer
	hsOpen *sealed.Opener
	send   *sealed.Sealer
	open   *sealed.Opener
	i2r    [roomudp.KeySize]byte // the session's client-to-node key (send's)
	loop   *kcploop.Loop
	kcp    *kcploop.Conv
	conv   uint32
	done   chan struct{}

	mu       sync.Mutex
	messages []received
	replays  atomic.Int64 // datagrams the session's replay window dropped: copies
	// challenges counts the PATH_CHALLENGEs received; each is answered
	// at once from this client's socket, as rooms-udp.md §8 asks.
	challenges atomic.Int64
	// mute drops what the client's KCP sends, as if lost: a test that
	// needs the client silent for a while sets it.
	mute atomic.Bool
}

type received struct {
	msg        []byte
	unreliable bool
	inputSeq   uint32 // a FRAME on channel 3: its input acknowledgement
	frameCh    bool   // came on channel 3
}

func (e *env) newClient(kid roomudp.KeyID, sk [32]byte) *client {
	e.t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		e.t.Fatal(err)
	}
	c := &client{t: e.t, pc: pc, to: e.addr, sk: sk, kid: kid, done: make(chan struct{})}
	_, _ = rand.Read(c.nonce[:])
	hk, err := roomudp.HandshakeKeys(&c.sk, &c.nonce)
	if err != nil {
		e.t.Fatal(err)
	}
	c.hsSeal, _ = sealed.NewSealer(hk.I2R[:], roomudp.HandshakeKeyID)
	c.hsOpen, _ = sealed.NewOpener(hk.R2I[:], roomudp.HandshakeKeyID)
	e.t.Cleanup(c.close)
	return c
}

func (c *client) close() {
	c.pc.Close()
	if c.loop != nil {
		c.loop.Close()
		<-c.done
	}
}

// handshakeDatagram seals a HANDSHAKE carrying hs.
func (c *client) handshakeDatagram(hs []byte) []byte {
	c.t.Helper()
	d, err := roomudp.AppendHandshake(nil, c.hsSeal, c.kid, &c.nonce, hs)
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

func helloBytes(t *testing.T, ticket string) []byte {
	t.Helper()
	hs, err := roomwire.AppendHandshake(nil, roomwire.KindHello, []byte(ticket), &roomwire.Hello{ClientNonce: 1, SDKVersion: "udp-test/1"})
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

func (c *client) write(d []byte) {
	c.t.Helper()
	if _, err := c.pc.WriteToUDP(d, c.to); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next datagram, or nil after wait.
func (c *client) read(wait time.Duration) []byte {
	buf := make([]byte, 2048)
	_ = c.pc.SetReadDeadline(time.Now().Add(wait))
	n, _, err := c.pc.ReadFromUDP(buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

// readReply returns the next datagram sealed under the handshake keys
// (key id 0), skipping the session's KCP datagrams, or nil after wait.
func (c *client) readReply(wait time.Duration) []byte {
	end := time.Now().Add(wait)
	for {
		d := c.read(time.Until(end))
		if d == nil {
			return nil
		}
		if h, err := sealed.ParseHeader(d); err == nil && h.KeyID == roomudp.HandshakeKeyID {
			return d
		}
	}
}

// handshake sends hs (retransmitting every 250 ms) until a reply opens,
// and returns the reply's message. On WELCOME it starts the session.
func (c *client) handshake(hs []byte) []byte {
	c.t.Helper()
	for range 40 {
		c.write(c.handshakeDatagram(hs))
		d := c.readReply(250 * time.Millisecond)
		if d == nil {
			continue
		}
		p, _, err := c.hsOpen.Open(nil, d)
		if err != nil {
			c.t.Fatalf("reply does not open: %v", err)
		}
		sn, msg, err := roomudp.ParseReply(p)
		if err != nil {
			c.t.Fatal(err)
		}
		if roomwire.Type(msg[0]) == roomwire.TypeWelcome {
			c.start(sn, msg)
		}
		return msg
	}
	c.t.Fatal("no handshake reply")
	return nil
}

func (c *client) start(sn [16]byte, welcome []byte) {
	c.t.Helper()
	var w roomwire.Welcome
	if err := w.Unmarshal(welcome); err != nil {
		c.t.Fatal(err)
	}
	c.conv = w.Conv
	keys, err := roomudp.SessionKeys(&c.sk, &c.nonce, &sn)
	if err != nil {
		c.t.Fatal(err)
	}
	c.i2r = keys.I2R
	c.send, _ = sealed.NewSealer(keys.I2R[:], c.conv)
	c.open, _ = sealed.NewOpener(keys.R2I[:], c.conv)
	if c.loop, err = kcploop.New(kcploop.Config{Logger: discard}); err != nil {
		c.t.Fatal(err)
	}
	kmtu := roomudp.DefaultMTU - roomudp.SessionOverhead
	c.kcp, err = c.loop.Open(c.conv, kcploop.ConvConfig{MTU: kmtu, SendWindow: roomudp.KCPWindow, RecvWindow: roomudp.KCPWindow,
		MaxMessage: 255 * (kmtu - kcploop.Overhead), NoDelay: true, Interval: roomudp.KCPInterval},
		func(_ *kcploop.Conv, b []byte) {
			if !c.mute.Load() {
				_, _ = c.pc.WriteToUDP(c.seal(roomudp.ChannelKCP, b), c.to)
			}
		})
	if err != nil {
		c.t.Fatal(err)
	}
	go func() { defer close(c.done); _ = c.loop.Run(context.Background()) }()
	go c.readLoop()
}

func (c *client) seal(ch byte, body []byte) []byte {
	d, err := c.send.Seal(nil, append([]byte{ch}, body...))
	if err != nil {
		panic(err)
	}
	return d
}

// readLoop collects the session's messages until the socket closes.
func (c *client) readLoop() {
	buf := make([]byte, 2048)
	msg := make([]byte, 1<<20)
	for {
		_ = c.pc.SetReadDeadline(time.Time{})
		n, _, err := c.pc.ReadFromUDP(buf)
		if err != nil {
			return
		}
		p, _, err := c.open.Open(nil, buf[:n])
		if errors.Is(err, sealed.ErrReplay) {
			c.replays.Add(1)
		}
		if err != nil {
			continue
		}
		ch, body, err := roomudp.ParseSession(p)
		if err != nil {
			continue
		}
		if ch == roomudp.ChannelMessage {
			c.add(append([]byte(nil), body...), true)
			continue
		}
		if ch == roomudp.ChannelPathChallenge {
			c.challenges.Add(1)
			_, _ = c.pc.WriteToUDP(c.seal(roomudp.ChannelPathResponse, body), c.to)
			continue
		}
		if ch == roomudp.ChannelFrame {
			seq, fr, err := roomudp.ParseFrame(body)
			if err != nil {
				continue
			}
			c.mu.Lock()
			c.messages = append(c.messages, received{msg: append([]byte(nil), fr...), unreliable: true, inputSeq: seq, frameCh: true})
			c.mu.Unlock()
			continue
		}
		_ = c.kcp.Input(body)
		for {
			n, err := c.kcp.Recv(msg)
			if err != nil {
				break
			}
			c.add(append([]byte(nil), msg[:n]...), false)
		}
	}
}

func (c *client) add(m []byte, unreliable bool) {
	c.mu.Lock()
	c.messages = append(c.messages, received{msg: m, unreliable: unreliable})
	c.mu.Unlock()
}

// reliable sends m on KCP; unreliable as one datagram.
func (c *client) reliable(m roomwire.Message) {
	c.t.Helper()
	b, err := m.AppendTo(nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.kcp.Send(b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) unreliable(m roomwire.Message) []byte {
	c.t.Helper()
	b, err := m.AppendTo(nil)
	if err != nil {
		c.t.Fatal(err)
	}
	d := c.seal(roomudp.ChannelMessage, b)
	c.write(d)
	return d
}

// inputs sends one INPUTS datagram: data[i] is the input numbered
// first+i, each with ack_frame 0.
func (c *client) inputs(first uint32, data ...[]byte) {
	c.t.Helper()
	b := roomudp.AppendInputsHeader(nil, first, len(data))
	for _, d := range data {
		m, err := (&roomwire.Input{Data: d}).AppendTo(nil)
		if err != nil {
			c.t.Fatal(err)
		}
		b = roomudp.AppendInputEntry(b, m)
	}
	c.write(c.seal(roomudp.ChannelInputs, b))
}

// await waits for a message of type t and returns it with its channel.
func (c *client) await(t roomwire.Type) received {
	c.t.Helper()
	var got received
	waitFor(c.t, "message "+t.String(), func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, m := range c.messages {
			if roomwire.Type(m.msg[0]) == t {
				got = m
				c.messages = append(c.messages[:i:i], c.messages[i+1:]...)
				return true
			}
		}
		return false
	})
	return got
}

func (c *client) count(t roomwire.Type) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.messages {
		if roomwire.Type(m.msg[0]) == t {
			n++
		}
	}
	return n
}

// pingPong sends an unreliable PING every 200 ms until a PONG arrives
// (like a real client's heartbeat: one datagram may be lost, e.g. when
// the test's socket buffer filled with KCP retransmissions while it was
// not reading), and returns the last PING datagram sent.
func (c *client) pingPong() []byte {
	c.t.Helper()
	var last []byte
	for range 50 {
		last = c.unreliable(&roomwire.Ping{ClientMS: 1})
		for range 20 {
			if c.count(roomwire.TypePong) > 0 {
				if p := c.await(roomwire.TypePong); !p.unreliable {
					c.t.Error("PONG to an unreliable PING came on KCP")
				}
				return last
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	c.t.Fatal("no PONG after 10 s")
	return nil
}
