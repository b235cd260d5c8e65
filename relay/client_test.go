package relay_test

// An independent relay client for the tests, written from the byte layouts
// of reference unity-relay.md §1 (and §2.3, §5) alone: it does not use
// protocol/relaywire (nor gobwas/ws), so that one misunderstanding cannot
// hide in both the server and its tests.

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Message types (reference §1.3).
const (
	tBind           = 0
	tBindReceived   = 1
	tPing           = 2
	tConnectRequest = 3
	tAccepted       = 6
	tRejected       = 8
	tDisconnect     = 9
	tRelay          = 10
	tClose          = 11
	tError          = 12
)

func hdr(t byte) []byte { return []byte{0xDA, 0x72, 0x00, t} }

func padded(blob []byte) []byte {
	f := make([]byte, 255)
	copy(f, blob)
	return f
}

// mBind is BIND (295 bytes): header, accept mode 0, nonce LE, length 255,
// connection data, HMAC-SHA256(key, bytes 0..262).
func mBind(nonce uint16, blob []byte, key []byte) []byte {
	b := append(hdr(tBind), 0)
	b = binary.LittleEndian.AppendUint16(b, nonce)
	b = append(b, 0xFF)
	b = append(b, padded(blob)...)
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return m.Sum(b)
}

func mPing(from [16]byte) []byte { return append(append(hdr(tPing), from[:]...), 1, 0) }

func mConnect(from [16]byte, hostBlob []byte) []byte {
	b := append(append(hdr(tConnectRequest), from[:]...), 0xFF)
	return append(b, padded(hostBlob)...)
}

func mFromTo(t byte, from, to [16]byte) []byte {
	return append(append(hdr(t), from[:]...), to[:]...)
}

func mRelay(from, to [16]byte, data []byte) []byte {
	b := binary.BigEndian.AppendUint16(mFromTo(tRelay, from, to), uint16(len(data)))
	return append(b, data...)
}

func mError(id [16]byte, code byte) []byte { return append(append(hdr(tError), id[:]...), code) }

// transport is a client socket: UDP or WebSocket.
type transport interface {
	send(b []byte)
	recv(d time.Duration) ([]byte, error)
	close()
}

var errTimeout = errors.New("no message")

type udpClient struct {
	t *testing.T
	c *net.UDPConn
}

func dialUDP(t *testing.T, addr string) *udpClient {
	t.Helper()
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp", nil, ra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &udpClient{t: t, c: c}
}

func (u *udpClient) send(b []byte) {
	if _, err := u.c.Write(b); err != nil {
		u.t.Fatal(err)
	}
}

func (u *udpClient) recv(d time.Duration) ([]byte, error) {
	buf := make([]byte, 65536)
	_ = u.c.SetReadDeadline(time.Now().Add(d))
	n, err := u.c.Read(buf)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil, errTimeout
	}
	return buf[:n], err
}

func (u *udpClient) close() { u.c.Close() }

// wsClient speaks RFC 6455 by hand: masked binary frames out, unmasked
// frames in.
type wsClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
	// The 101 response's headers.
	header http.Header
}

func dialWS(t *testing.T, addr, path string) (*wsClient, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	key := make([]byte, 16)
	rand.Read(key)
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n",
		path, addr, base64.StdEncoding.EncodeToString(key))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 101 {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	return &wsClient{t: t, c: c, br: br, header: resp.Header}, nil
}

func (w *wsClient) send(b []byte) {
	var f []byte
	f = append(f, 0x82) // FIN, binary
	switch {
	case len(b) < 126:
		f = append(f, 0x80|byte(len(b)))
	default:
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(len(b)))
	}
	mask := []byte{1, 2, 3, 4}
	f = append(f, mask...)
	for i, x := range b {
		f = append(f, x^mask[i%4])
	}
	if _, err := w.c.Write(f); err != nil {
		w.t.Fatal(err)
	}
}

func (w *wsClient) recv(d time.Duration) ([]byte, error) {
	_ = w.c.SetReadDeadline(time.Now().Add(d))
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, errTimeout
		}
		return nil, err
	}
	if h[1]&0x80 != 0 {
		return nil, errors.New("masked server frame")
	}
	n := int(h[1] & 0x7F)
	switch n {
	case 126:
		var l [2]byte
		io.ReadFull(w.br, l[:])
		n = int(binary.BigEndian.Uint16(l[:]))
	case 127:
		return nil, errors.New("huge frame")
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(w.br, p); err != nil {
		return nil, err
	}
	if op := h[0] & 0x0F; op != 2 {
		return nil, fmt.Errorf("opcode %d", op)
	}
	return p, nil
}

func (w *wsClient) close() { w.c.Close() }

// expect reads messages until one equals want (failing on timeout).
func expect(t *testing.T, c transport, want []byte) {
	t.Helper()
	for {
		got, err := c.recv(5 * time.Second)
		if err != nil {
			t.Fatalf("waiting for % x: %v", want, err)
		}
		if bytes.Equal(got, want) {
			return
		}
		t.Logf("skipping % x", got)
	}
}

// expectNext fails unless the next message is want.
func expectNext(t *testing.T, c transport, want []byte) {
	t.Helper()
	got, err := c.recv(5 * time.Second)
	if err != nil {
		t.Fatalf("waiting for % x: %v", want, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
}

// expectSilence fails if a message arrives within a short while. It is not
// a timing assertion: a message that should not come never does.
func expectSilence(t *testing.T, c transport) {
	t.Helper()
	if got, err := c.recv(200 * time.Millisecond); err == nil {
		t.Fatalf("got % x, want nothing", got)
	}
}
