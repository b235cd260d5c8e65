package rooms_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
	"github.com/switchboardgg/switchboard/internal/impair"
)

func startUDPDeployment(t *testing.T) *deployment {
	t.Helper()
	d, err := launchWith("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.close)
	if d.stack.NodeUDP == "" {
		t.Fatal("the node serves no UDP")
	}
	return d
}

// proxy serves an impair proxy in front of the node's UDP channel.
func (d *deployment) proxy(t *testing.T, faults impair.Faults) (*impair.Proxy, netip.AddrPort) {
	t.Helper()
	px, err := impair.New(impair.Config{Target: d.stack.NodeUDP, Up: faults, Down: faults, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = px.Serve(uc) }()
	t.Cleanup(func() { px.Close(); <-served })
	return px, uc.LocalAddr().(*net.UDPAddr).AddrPort()
}

// udpPlayer logs a user in and connects the room with the SDK's default
// transport (UDP first); via, when valid, is an impair proxy its UDP
// datagrams go through.
func (d *deployment) udpPlayer(t *testing.T, roomID, username string, via netip.AddrPort) *rooms.Room {
	t.Helper()
	ctx := t.Context()
	auth, err := d.be.CreateAuthToken(ctx, username, 0)
	if err != nil {
		t.Fatal(err)
	}
	ticket, _, err := d.be.CreateTicket(ctx, roomID, backend.TicketRequest{Username: username})
	if err != nil {
		t.Fatal(err)
	}
	sc := rooms.UDPSocketConfig{Logger: discard}
	if via.IsValid() {
		sc.Redirect = func(netip.AddrPort) netip.AddrPort { return via }
	}
	sock, err := rooms.NewUDPSocket(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sock.Close() }) // after the room's Close: cleanups run last first
	cfg := &rooms.Config{HTTPClient: d.hc, Logger: discard, UDPSocket: sock, Backoff: func(int) time.Duration { return 0 }}
	c, err := rooms.Login(ctx, d.api, username, auth, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Connect(ctx, roomID, rooms.JoinOptions{Ticket: ticket})
	if err != nil {
		t.Fatalf("%s: connect: %v", username, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestEndToEndUDP plays a room on a real control plane and game node over
// the UDP channel: one player direct, one through a proxy that loses and
// reorders 10 % of the datagrams each way and then rebinds its address
// (a NAT that remaps): both keep getting the same gapless frames with each
// other's inputs, without a disconnect. The node checks bob's new address
// (a PATH_CHALLENGE, rooms-udp.md §8) and bob's SDK answers; nobody else
// is challenged.
func TestEndToEndUDP(t *testing.T) {
	d := startUDPDeployment(t)
	room, err := d.createRoom(t.Context(), backend.CreateRoomRequest{SyncMode: "frame", TickRate: new(30), MaxPlayers: new(2), StartMode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	lossy := impair.Faults{Loss: 0.1, Reorder: 0.1, ReorderDelay: 10 * time.Millisecond}
	px, via := d.proxy(t, lossy)
	alice := d.udpPlayer(t, room.RoomID, "alice", netip.AddrPort{})
	bob := d.udpPlayer(t, room.RoomID, "bob", via)
	for _, r := range []*rooms.Room{alice, bob} {
		if r.Transport() != rooms.TransportUDP {
			t.Fatalf("transport %q, want udp", r.Transport())
		}
	}
	pa, pb := startPump(t, alice), startPump(t, bob)
	pa.waitFrames(t, 30)
	pb.waitFrames(t, 30)
	if a, b := alice.Stats().PathChallenges, bob.Stats().PathChallenges; a+b != 0 {
		t.Fatalf("challenged before any rebind: alice %d, bob %d", a, b)
	}
	if err := px.Rebind(); err != nil {
		t.Fatal(err)
	}
	at := pb.lastFrame()
	pa.waitFrames(t, at+60)
	pb.waitFrames(t, at+60)
	for _, p := range []*pump{pa, pb} {
		p.mu.Lock()
		gaps, seen := p.gaps, len(p.seen)
		p.mu.Unlock()
		if gaps != 0 || seen != 2 {
			t.Errorf("%d gaps, inputs of %d seats; want none and 2", gaps, seen)
		}
	}
	if a, b := alice.Stats().PathChallenges, bob.Stats().PathChallenges; a != 0 || b == 0 {
		t.Errorf("after bob's rebind: alice answered %d challenges, bob %d; want 0 and some", a, b)
	}
	if n := bob.Stats().Disconnects + alice.Stats().Disconnects; n != 0 {
		t.Errorf("%d disconnects over UDP with loss and a rebind", n)
	}
	st := px.Stats()
	if st.Rebinds != 1 || st.Up.Lost == 0 || st.Down.Lost == 0 {
		t.Errorf("proxy %+v: want a rebind and losses both ways", st)
	}
	t.Logf("bob through the proxy: lost up %d down %d, reordered up %d down %d, FRAME_REQ %d",
		st.Up.Lost, st.Down.Lost, st.Up.Reordered, st.Down.Reordered, bob.Stats().FrameRequests)
}

// TestEndToEndUDPBlockedFallsBack: a client whose UDP is black-holed gets
// no answer to its handshake and plays over WebSocket instead.
func TestEndToEndUDPBlockedFallsBack(t *testing.T) {
	d := startUDPDeployment(t)
	room, err := d.createRoom(t.Context(), backend.CreateRoomRequest{SyncMode: "frame", TickRate: new(30), MaxPlayers: new(1), StartMode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	px, via := d.proxy(t, impair.Faults{})
	px.SetBlackout(impair.Up, true)
	px.SetBlackout(impair.Down, true)
	r := d.udpPlayer(t, room.RoomID, "carol", via)
	if r.Transport() != rooms.TransportWS || r.Stats().UDPFallbacks != 1 {
		t.Fatalf("transport %q after %d fallbacks, want ws after 1", r.Transport(), r.Stats().UDPFallbacks)
	}
	p := startPump(t, r)
	p.waitFrames(t, 30)
	if st := px.Stats(); st.Up.Blackholed == 0 {
		t.Errorf("no handshake reached the proxy: %+v", st.Up)
	}
}

// TestEndToEndResumeSwitchesChannels: a client on UDP whose UDP goes dark
// resumes over WebSocket; when its WebSocket is cut later, with UDP back,
// it resumes over UDP. Frames stay gapless throughout.
func TestEndToEndResumeSwitchesChannels(t *testing.T) {
	d := startUDPDeployment(t)
	room, err := d.createRoom(t.Context(), backend.CreateRoomRequest{SyncMode: "frame", TickRate: new(30), MaxPlayers: new(1), StartMode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	px, via := d.proxy(t, impair.Faults{})
	ctx := t.Context()
	auth, err := d.be.CreateAuthToken(ctx, "erin", 0)
	if err != nil {
		t.Fatal(err)
	}
	ticket, _, err := d.be.CreateTicket(ctx, room.RoomID, backend.TicketRequest{Username: "erin"})
	if err != nil {
		t.Fatal(err)
	}
	sock, err := rooms.NewUDPSocket(rooms.UDPSocketConfig{Logger: discard, Redirect: func(netip.AddrPort) netip.AddrPort { return via }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sock.Close() })
	var cs conns
	cfg := &rooms.Config{
		HTTPClient: d.hc, Logger: discard, UDPSocket: sock, Dialer: &ws.Dialer{NetDial: cs.dial},
		Heartbeat: 100 * time.Millisecond, SilenceTimeout: time.Second, UDPFallback: 500 * time.Millisecond,
		Backoff: func(int) time.Duration { return 0 },
	}
	c, err := rooms.Login(ctx, d.api, "erin", auth, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Connect(ctx, room.RoomID, rooms.JoinOptions{Ticket: ticket})
	if err != nil {
		t.Fatal(err)
	}
	p := startPump(t, r)
	if r.Transport() != rooms.TransportUDP {
		t.Fatalf("transport %q, want udp", r.Transport())
	}
	p.waitFrames(t, 15)

	px.SetBlackout(impair.Up, true)
	px.SetBlackout(impair.Down, true)
	p.event(t, rooms.EventDisconnected)
	p.event(t, rooms.EventResumed)
	if r.Transport() != rooms.TransportWS {
		t.Fatalf("resumed over %q with UDP dark, want ws", r.Transport())
	}
	p.waitFrames(t, p.lastFrame()+15)

	px.SetBlackout(impair.Up, false)
	px.SetBlackout(impair.Down, false)
	cs.cutLast()
	p.event(t, rooms.EventDisconnected)
	p.event(t, rooms.EventResumed)
	if r.Transport() != rooms.TransportUDP {
		t.Fatalf("resumed over %q with UDP back, want udp", r.Transport())
	}
	p.waitFrames(t, p.lastFrame()+15)
	p.mu.Lock()
	gaps := p.gaps
	p.mu.Unlock()
	if st := r.Stats(); gaps != 0 || st.Resumes != 2 || st.UDPFallbacks != 1 {
		t.Errorf("%d gaps, stats %+v: want none, 2 resumes, 1 fallback", gaps, st)
	}
}

// TestEndToEndUDPInputsNeverLost: through a proxy that loses 30 % of the
// datagrams each way, a player that sends each input once and then waits
// sees every one of them in a frame: the INPUTS datagram repeats it until
// a FRAME acknowledges it, whatever was lost.
func TestEndToEndUDPInputsNeverLost(t *testing.T) {
	d := startUDPDeployment(t)
	room, err := d.createRoom(t.Context(), backend.CreateRoomRequest{SyncMode: "frame", TickRate: new(30), MaxPlayers: new(1), StartMode: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	px, via := d.proxy(t, impair.Faults{Loss: 0.3})
	r := d.udpPlayer(t, room.RoomID, "carol", via)
	if r.Transport() != rooms.TransportUDP {
		t.Fatalf("transport %q, want udp", r.Transport())
	}
	deadline := time.After(60 * time.Second)
	for i := range 20 {
		want := []byte{'i', byte(i)}
		if err := r.SendInput(want); err != nil {
			t.Fatal(err)
		}
	frames:
		for {
			select {
			case f := <-r.Frames():
				for _, in := range f.Inputs {
					if string(in.Data) == string(want) {
						break frames
					}
				}
			case <-deadline:
				t.Fatalf("input %d not in a frame after 60 s", i)
			}
		}
	}
	if st := px.Stats(); st.Up.Lost == 0 || st.Down.Lost == 0 {
		t.Errorf("proxy %+v: want losses both ways", st)
	}
	t.Logf("proxy: lost up %d down %d; disconnects %d", px.Stats().Up.Lost, px.Stats().Down.Lost, r.Stats().Disconnects)
}
