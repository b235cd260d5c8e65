package udp

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/time/rate"

	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/internal/sealed"
	"github.com/switchboardgg/switchboard/protocol/roomudp"
	"github.com/switchboardgg/switchboard/tokens"
)

// FuzzHandle feeds arbitrary datagrams to a live reader with one session
// (key id 7, KCP open): nothing may panic, and nothing that does not
// authenticate may be answered (the outgoing queue stays empty) or move
// the session.
func FuzzHandle(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "roomwire", "udp.json"))
	if err != nil {
		f.Fatal(err)
	}
	var vs map[string][]map[string]any
	_ = json.Unmarshal(b, &vs)
	for _, group := range []string{"seal", "handshake", "reply"} {
		for _, v := range vs[group] {
			if d, err := hex.DecodeString(v["datagram"].(string)); err == nil {
				f.Add(d)
			}
		}
	}
	key := bytes.Repeat([]byte{1}, 32)
	seal, _ := sealed.NewSealer(key, 7)
	for _, p := range [][]byte{{0}, {0, 1, 2}, {1}, {2, 0x50}, {5, 1, 2, 3, 4, 5, 6, 7, 8}, {4, 1, 2, 3, 4, 5, 6, 7, 8}, {5, 1}} {
		d, _ := seal.Seal(nil, p)
		f.Add(d)
	}
	for _, group := range []string{"inputs", "frame"} { // the INPUTS and FRAME bodies, each on both channels
		for _, v := range vs[group] {
			if body, err := hex.DecodeString(v["body"].(string)); err == nil {
				d, _ := seal.Seal(nil, append([]byte{roomudp.ChannelInputs}, body...))
				f.Add(d)
				d, _ = seal.Seal(nil, append([]byte{roomudp.ChannelFrame}, body...))
				f.Add(d)
			}
		}
	}
	f.Add([]byte{})
	f.Add(make([]byte, roomudp.HandshakeSize))

	signer, _ := tokens.NewSigner(bytes.Repeat([]byte{3}, 32))
	loop, err := kcploop.New(kcploop.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	defer loop.Close()
	f.Fuzz(func(t *testing.T, d []byte) {
		s := &Server{m: newMetrics(), sessions: map[uint32]*session{}, pending: map[hsKey]*session{},
			secret: signer.Derive(roomudp.SecretLabel), loop: loop, log: slog.New(slog.DiscardHandler),
			cfg: Config{MaxPending: 8, MaxSessions: 8, MTU: roomudp.DefaultMTU}}
		s.out.init(4)
		open, _ := sealed.NewOpener(key, 7)
		home := netip.MustParseAddrPort("127.0.0.1:1")
		ss := &session{s: s, open: open, send: seal, conv: 7, addr: home, lim: rate.NewLimiter(rate.Inf, 0)}
		ss.kcp, err = loop.Open(7, kcploop.ConvConfig{}, func(*kcploop.Conv, []byte) {})
		if err != nil {
			t.Fatal(err)
		}
		defer ss.kcp.Close()
		s.sessions[7] = ss
		r := &reader{s: s, plain: make([]byte, roomudp.MaxDatagram), recv: make([]byte, 1<<16)}
		r.handle(d, netip.MustParseAddrPort("10.0.0.1:2"))
		authentic := false
		if len(d) >= sealed.Overhead && d[0] == roomudp.KindSession {
			o, _ := sealed.NewOpener(key, 7)
			_, _, err := o.Open(nil, d)
			authentic = err == nil
		}
		if !authentic {
			if got := len(s.out.take()); got != 0 {
				t.Fatalf("answered an unauthenticated datagram with %d datagrams", got)
			}
			if ss.dest() != home {
				t.Fatal("an unauthenticated datagram moved the session")
			}
		}
	})
}

// dest returns the session's address.
func (ss *session) dest() netip.AddrPort {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.addr
}
