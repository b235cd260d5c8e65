package rooms

import (
	"testing"

	"github.com/gobwas/ws"
)

// unmaskFrame returns the payload of one masked client frame.
func unmaskFrame(t *testing.T, b []byte) []byte {
	t.Helper()
	if len(b) < 6 || b[0] != 0x80|byte(ws.OpBinary) || b[1]&0x80 == 0 {
		t.Fatalf("not a final masked binary frame: % x", b)
	}
	n, off := int(b[1]&0x7F), 2
	switch n {
	case 126:
		n, off = int(b[2])<<8|int(b[3]), 4
	case 127:
		t.Fatal("64-bit length in a test frame")
	}
	var mask [4]byte
	copy(mask[:], b[off:off+4])
	p := append([]byte(nil), b[off+4:off+4+n]...)
	ws.Cipher(p, mask, 0)
	return p
}
