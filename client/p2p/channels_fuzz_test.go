package p2p

import (
	"encoding/binary"
	"log/slog"
	"testing"
)

// FuzzChannelsInput feeds arbitrary RELIABLE bodies from two peers to a
// channel layer: it never panics, never opens more than
// MaxConversations, and whatever it delivers is a whole envelope.
func FuzzChannelsInput(f *testing.F) {
	seg := make([]byte, 24+5)
	binary.LittleEndian.PutUint32(seg, uint32(Ch1)|1<<8)
	seg[4] = 81 // IKCP_CMD_PUSH
	binary.LittleEndian.PutUint16(seg[6:], 128)
	binary.LittleEndian.PutUint32(seg[20:], 5)
	copy(seg[24:], []byte{0, 'h', 'e', 'l', 'o'}) // an envelope: no flags, payload "helo"
	f.Add(append([]byte{byte(Ch1)}, seg...), []byte{byte(Realtime), 3, 1, 0, 0})
	f.Add([]byte{9, 1, 2, 3}, []byte{})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		l := newChannels(ReliableConfig{MaxConversations: 2, QueueLen: 4}, slog.New(slog.DiscardHandler), func(string, []byte) {})
		l.start()
		defer l.close()
		for i, body := range [][]byte{a, b, a} {
			if len(body) < 2 {
				continue
			}
			l.input([]string{"x~1", "y~2", "x~1"}[i], Channel(body[0]), body[1:])
		}
		if n := l.stats().Conversations; n > 2 {
			t.Fatalf("%d conversations open, cap 2", n)
		}
		for {
			select {
			case m := <-l.out:
				if m.Channel != Ch1 && m.Channel != Ch2 && m.Channel != Realtime {
					t.Fatalf("delivered on %d", m.Channel)
				}
				continue
			default:
			}
			break
		}
	})
}
