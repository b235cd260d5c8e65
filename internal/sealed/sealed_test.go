package sealed_test

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/internal/sealed"
)

func pair(t testing.TB, keyID uint32) (*sealed.Sealer, *sealed.Opener) {
	t.Helper()
	secret := make([]byte, sealed.KeySize)
	in, rn := make([]byte, sealed.NonceSize), make([]byte, sealed.NonceSize)
	for _, b := range [][]byte{secret, in, rn} {
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
	}
	k, err := sealed.DeriveKeys(secret, in, rn, "test")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sealed.NewSealer(k.I2R[:], keyID)
	if err != nil {
		t.Fatal(err)
	}
	o, err := sealed.NewOpener(k.I2R[:], keyID)
	if err != nil {
		t.Fatal(err)
	}
	return s, o
}

func TestDeriveKeysDiffer(t *testing.T) {
	secret := bytes.Repeat([]byte{1}, sealed.KeySize)
	a := bytes.Repeat([]byte{2}, sealed.NonceSize)
	b := bytes.Repeat([]byte{3}, sealed.NonceSize)
	k1, err := sealed.DeriveKeys(secret, a, b, "session")
	if err != nil {
		t.Fatal(err)
	}
	if k1.I2R == k1.R2I {
		t.Fatal("both directions got the same key")
	}
	for _, other := range []struct {
		name  string
		i, r  []byte
		label string
	}{
		{"swapped nonces", b, a, "session"},
		{"new initiator nonce", b, b, "session"},
		{"other label", a, b, "handshake"},
	} {
		k2, err := sealed.DeriveKeys(secret, other.i, other.r, other.label)
		if err != nil {
			t.Fatal(err)
		}
		if k2.I2R == k1.I2R || k2.R2I == k1.R2I || k2.I2R == k1.R2I {
			t.Errorf("%s: a key repeats", other.name)
		}
	}
}

func TestDeriveKeysBadSizes(t *testing.T) {
	ok, n := make([]byte, sealed.KeySize), make([]byte, sealed.NonceSize)
	for _, tc := range []struct {
		name         string
		secret, i, r []byte
		label        string
	}{
		{"short secret", ok[:31], n, n, "x"},
		{"short nonce", ok, n[:15], n, "x"},
		{"long nonce", ok, n, append(n, 0), "x"},
		{"empty label", ok, n, n, ""},
		{"long label", ok, n, n, string(make([]byte, sealed.MaxLabelSize+1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := sealed.DeriveKeys(tc.secret, tc.i, tc.r, tc.label); !errors.Is(err, sealed.ErrKey) {
				t.Fatalf("got %v, want ErrKey", err)
			}
		})
	}
	if _, err := sealed.NewSealer(ok[:16], 1); !errors.Is(err, sealed.ErrKey) {
		t.Fatalf("NewSealer with a 16-byte key: got %v, want ErrKey", err)
	}
	if _, err := sealed.NewOpener(nil, 1); !errors.Is(err, sealed.ErrKey) {
		t.Fatalf("NewOpener with no key: got %v, want ErrKey", err)
	}
}

func TestRoundTripAndHeader(t *testing.T) {
	s, o := pair(t, 42)
	for i := range 3 {
		payload := []byte{byte(i), 2, 3}
		d, err := s.Seal(nil, payload)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(d), len(payload)+sealed.Overhead; got != want {
			t.Fatalf("datagram is %d bytes, want %d", got, want)
		}
		h, err := sealed.ParseHeader(d)
		if err != nil {
			t.Fatal(err)
		}
		if h != (sealed.Header{Version: sealed.Version, KeyID: 42, Sequence: uint64(i)}) {
			t.Fatalf("got header %+v", h)
		}
		p, seq, err := o.Open(nil, d)
		if err != nil || seq != uint64(i) || !bytes.Equal(p, payload) {
			t.Fatalf("open: got %x %d %v, want %x %d", p, seq, err, payload, i)
		}
	}
}

// Every byte of the header is authenticated: changing any one fails.
func TestHeaderAuthenticated(t *testing.T) {
	s, o := pair(t, 42)
	d, err := s.Seal(nil, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < sealed.HeaderSize; i++ { // byte 0 is the version: ErrVersion
		bad := bytes.Clone(d)
		bad[i] ^= 0x10
		if _, _, err := o.Open(nil, bad); err == nil {
			t.Fatalf("header byte %d changed and still opened", i)
		}
	}
	if _, _, err := o.Open(nil, d); err != nil {
		t.Fatalf("the original after the forgeries: %v", err)
	}
}

func TestInPlace(t *testing.T) {
	s, o := pair(t, 1)
	buf := make([]byte, sealed.HeaderSize, 64)
	buf = append(buf, "in place"...)
	d, err := s.Seal(buf[:0], buf[sealed.HeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := o.Open(d[sealed.HeaderSize:sealed.HeaderSize], d)
	if err != nil || string(p) != "in place" {
		t.Fatalf("got %q %v", p, err)
	}
}

func TestExhaustionRefused(t *testing.T) {
	s, o := pair(t, 1)
	s.SetNext(sealed.MaxSequence - 1)
	d, err := s.Seal(nil, []byte("last"))
	if err != nil {
		t.Fatalf("the last usable sequence number: %v", err)
	}
	if _, seq, err := o.Open(nil, d); err != nil || seq != sealed.MaxSequence-1 {
		t.Fatalf("open the last: seq %d, %v", seq, err)
	}
	for range 2 {
		got, err := s.Seal([]byte("x"), []byte("wrapped?"))
		if !errors.Is(err, sealed.ErrExhausted) || string(got) != "x" {
			t.Fatalf("got %q %v, want dst unchanged and ErrExhausted", got, err)
		}
	}
	if s.Next() != sealed.MaxSequence {
		t.Fatalf("the counter moved: %d", s.Next())
	}
}

func TestTooLarge(t *testing.T) {
	s, o := pair(t, 1)
	if _, err := s.Seal(nil, make([]byte, sealed.MaxPayload+1)); !errors.Is(err, sealed.ErrTooLarge) {
		t.Fatalf("seal: got %v, want ErrTooLarge", err)
	}
	d, err := s.Seal(nil, make([]byte, sealed.MaxPayload))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Open(nil, append(d, 0)); !errors.Is(err, sealed.ErrTooLarge) {
		t.Fatalf("open: got %v, want ErrTooLarge", err)
	}
	if _, _, err := o.Open(nil, d); err != nil {
		t.Fatalf("open the largest: %v", err)
	}
}

// The window accepts any order inside WindowSize and each number once.
func TestWindowOutOfOrder(t *testing.T) {
	s, o := pair(t, 1)
	const n = 3000
	ds := make([][]byte, n)
	for i := range ds {
		d, err := s.Seal(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ds[i] = d
	}
	// Deliver in blocks of 512 reversed: every datagram is within the
	// window of the highest seen so far.
	for b := 0; b < n; b += 512 {
		for i := min(b+511, n-1); i >= b; i-- {
			if _, seq, err := o.Open(nil, ds[i]); err != nil {
				t.Fatalf("seq %d: %v", seq, err)
			}
		}
	}
	for i, d := range ds {
		if _, _, err := o.Open(nil, d); !errors.Is(err, sealed.ErrReplay) {
			t.Fatalf("replay of %d: got %v, want ErrReplay", i, err)
		}
	}
}

func TestConcurrentOpenAcceptsOnce(t *testing.T) {
	s, o := pair(t, 1)
	const n = 200
	ds := make([][]byte, n)
	for i := range ds {
		ds[i], _ = s.Seal(nil, []byte("x"))
	}
	var mu sync.Mutex
	accepted := make(map[uint64]int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var buf []byte
			for _, d := range ds {
				_, seq, err := o.Open(buf[:0], d)
				if err == nil {
					mu.Lock()
					accepted[seq]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for i := range n {
		if accepted[uint64(i)] != 1 {
			t.Fatalf("seq %d accepted %d times", i, accepted[uint64(i)])
		}
	}
}

// Over real UDP sockets: datagrams arrive and open, a replayed copy sent
// again by an attacker and a forged one are refused.
func TestOverUDP(t *testing.T) {
	s, o := pair(t, 77)
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()

	const n = 50
	var sent [][]byte
	for i := range n {
		d, err := s.Seal(nil, binary.BigEndian.AppendUint32(nil, uint32(i)))
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, d)
	}
	forged := bytes.Clone(sent[0])
	forged[sealed.HeaderSize] ^= 1
	binary.BigEndian.PutUint64(forged[5:13], 1000) // a fresh sequence number
	attack := [][]byte{sent[3], forged, sent[7]}

	go func() {
		for _, d := range append(sent, attack...) {
			if _, err := tx.Write(d); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 2048)
	var out []byte
	got, refused := 0, map[error]int{}
	if err := rx.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for got+refused[sealed.ErrReplay]+refused[sealed.ErrAuth] < n+len(attack) {
		m, _, err := rx.ReadFromUDP(buf)
		if err != nil {
			// Loopback UDP may drop under load; what arrived must still be right.
			t.Logf("read: %v (got %d, refused %v)", err, got, refused)
			break
		}
		p, _, err := o.Open(out[:0], buf[:m])
		switch {
		case err == nil:
			if len(p) != 4 {
				t.Fatalf("got payload %x", p)
			}
			got++
		default:
			refused[err]++
		}
	}
	if got > n {
		t.Fatalf("opened %d datagrams, only %d were sent", got, n)
	}
	if refused[sealed.ErrAuth] != 1 {
		t.Fatalf("forged datagram: refused %v", refused)
	}
	if got == n && refused[sealed.ErrReplay] != 2 {
		t.Fatalf("replayed datagrams: refused %v, want 2 ErrReplay", refused)
	}
}

func TestZeroAllocs(t *testing.T) {
	s, o := pair(t, 1)
	payload := make([]byte, 1200)
	dbuf := make([]byte, 0, 1300)
	pbuf := make([]byte, 0, 1300)
	allocs := testing.AllocsPerRun(200, func() {
		d, err := s.Seal(dbuf[:0], payload)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := o.Open(pbuf[:0], d); err != nil {
			t.Fatal(err)
		}
		if _, _, err := o.Open(pbuf[:0], d); !errors.Is(err, sealed.ErrReplay) {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("seal+open+replay: %v allocations, want 0", allocs)
	}
}

func benchSizes() []int { return []int{64, 512, 1200} }

func BenchmarkSeal(b *testing.B) {
	for _, size := range benchSizes() {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			s, _ := pair(b, 1)
			payload := make([]byte, size)
			buf := make([]byte, 0, size+sealed.Overhead)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Seal(buf[:0], payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	for _, size := range benchSizes() {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			s, o := pair(b, 1)
			payload := make([]byte, size)
			// Pre-seal a ring of datagrams so that each Open sees a fresh
			// sequence number inside the window.
			ring := make([][]byte, 1024)
			buf := make([]byte, 0, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i%len(ring) == 0 {
					b.StopTimer()
					for j := range ring {
						ring[j], _ = s.Seal(ring[j][:0], payload)
					}
					b.StartTimer()
				}
				if _, _, err := o.Open(buf[:0], ring[i%len(ring)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
