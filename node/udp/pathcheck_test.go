package udp_test

import (
	"net"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// frames returns the frame numbers c received, in FRAME and FRAME_BATCH
// messages, and forgets those messages.
func (c *client) frames(t *testing.T) map[uint32]bool {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	got := map[uint32]bool{}
	keep := c.messages[:0]
	for _, m := range c.messages {
		var tfs []roomwire.TickFrame
		switch roomwire.Type(m.msg[0]) {
		case roomwire.TypeFrame:
			var f roomwire.Frame
			if err := f.Unmarshal(m.msg); err != nil {
				t.Fatal(err)
			}
			tfs = f.Frames
		case roomwire.TypeFrameBatch:
			var f roomwire.FrameBatch
			if err := f.Unmarshal(m.msg); err != nil {
				t.Fatal(err)
			}
			tfs = f.Frames
		default:
			keep = append(keep, m)
			continue
		}
		for _, tf := range tfs {
			got[tf.Number] = true
		}
	}
	c.messages = keep
	return got
}

// TestPathCheckForgedSource: the holder of a session's keys seals one
// datagram, with a sequence number above every earlier one, from a
// socket that never answers a PATH_CHALLENGE (a forged source: the
// victim's address). The session moves there, but for the next 2 s that
// address gets at most 3 times the bytes it sent: a challenge and what
// fits, not the room's FRAMEs at tick rate. The real client's next
// datagram from its own, validated address moves the session back with no
// challenge, and its game goes on: every frame reaches it, the ones the
// detour took through FRAME_REQ on KCP.
func TestPathCheckForgedSource(t *testing.T) {
	e := newEnv(t)
	c := e.playing(t, "r-forge")
	c.reliable(&roomwire.Ready{})
	c.await(roomwire.TypeRoomState)
	seen := map[uint32]bool{}
	var f roomwire.Frame
	if err := f.Unmarshal(c.await(roomwire.TypeFrame).msg); err != nil {
		t.Fatal(err)
	}
	for _, tf := range f.Frames {
		seen[tf.Number] = true
	}

	victim, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	got := make(chan [2]int, 1) // bytes and PATH_CHALLENGEs the victim received
	go func() {
		buf := make([]byte, 2048)
		total, challenges := 0, 0
		_ = victim.SetReadDeadline(time.Now().Add(2 * time.Second))
		for {
			n, _, err := victim.ReadFromUDP(buf)
			if err != nil {
				got <- [2]int{total, challenges}
				return
			}
			total += n
			if p, _, err := c.open.Open(nil, buf[:n]); err == nil && p[0] == roomudp.ChannelPathChallenge {
				challenges++
			}
		}
	}()
	ping, _ := (&roomwire.Ping{ClientMS: 3}).AppendTo(nil)
	forged := c.seal(roomudp.ChannelMessage, ping)
	if _, err := victim.WriteToUDP(forged, e.addr); err != nil {
		t.Fatal(err)
	}
	// The client says nothing for 500 ms (its KCP's datagrams are lost):
	// without the check, 15 FRAMEs would go to the victim meanwhile
	// (30 Hz).
	c.mute.Store(true)
	time.Sleep(500 * time.Millisecond)
	c.mute.Store(false)
	c.pingPong() // from the client's own address: back at once
	res := <-got
	bound := 3 * len(forged)
	t.Logf("the victim sent %d bytes and received %d (%d challenges)", len(forged), res[0], res[1])
	if res[0] > bound {
		t.Errorf("the victim received %d bytes for the %d it sent: over 3 times (%d)", res[0], len(forged), bound)
	}
	if res[1] == 0 {
		t.Error("the victim got no PATH_CHALLENGE")
	}
	paths := func(result string) float64 {
		return e.counter("switchboard_node_udp_path_checks_total", "result", result)
	}
	if paths("abandoned") != 1 || paths("validated") != 0 {
		t.Errorf("path checks: %v abandoned, %v validated; want 1 and 0", paths("abandoned"), paths("validated"))
	}
	if got := e.counter("switchboard_node_udp_dropped_total", "reason", "unvalidated"); got < 5 {
		t.Errorf("%v datagrams held back from the victim, want most of 15 FRAMEs", got)
	}
	if n := c.challenges.Load(); n != 0 {
		t.Errorf("the client was challenged %d times on its validated address", n)
	}

	// The game goes on: a frame past the detour arrives, and FRAME_REQ
	// fills whatever the detour took.
	var last uint32
	waitFor(t, "frames after the detour", func() bool {
		for n := range c.frames(t) {
			seen[n] = true
			last = max(last, n)
		}
		return last > 30
	})
	var missing []uint32
	for n := uint32(1); n <= last; n++ {
		if !seen[n] {
			missing = append(missing, n)
		}
	}
	t.Logf("frames 1..%d, %d missing after the detour: %v", last, len(missing), missing)
	if len(missing) > 0 {
		c.reliable(&roomwire.FrameReq{From: missing[0], To: missing[len(missing)-1]})
		waitFor(t, "the missing frames", func() bool {
			for n := range c.frames(t) {
				seen[n] = true
			}
			for _, n := range missing {
				if !seen[n] {
					return false
				}
			}
			return true
		})
	}
}

// TestPathChannelsChecked: a PATH_CHALLENGE from a client, a
// PATH_RESPONSE of the wrong length, and one that answers no check are
// dropped and counted; the first two count as invalid messages.
func TestPathChannelsChecked(t *testing.T) {
	e := newEnv(t)
	c := e.playing(t, "r-path")
	drops := func(reason string) float64 {
		return e.counter("switchboard_node_udp_dropped_total", "reason", reason)
	}
	data := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	c.write(c.seal(roomudp.ChannelPathChallenge, data))
	waitFor(t, "a challenge from a client counted invalid", func() bool { return drops("invalid") == 1 })
	c.write(c.seal(roomudp.ChannelPathResponse, data[:7]))
	waitFor(t, "a 7-byte response counted invalid", func() bool { return drops("invalid") == 2 })
	c.write(c.seal(roomudp.ChannelPathResponse, data))
	waitFor(t, "a response to no check counted stale", func() bool { return drops("stale") == 1 })
	if got := e.counter("switchboard_node_udp_path_checks_total", "result", "validated"); got != 0 {
		t.Errorf("%v validated", got)
	}
	c.pingPong() // two invalid messages are below the limit of three in a row
}
