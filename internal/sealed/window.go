package sealed

// Replay window, after RFC 6479: a ring of windowWords 64-bit words in
// which bit (seq mod windowBits) says whether seq was accepted. One word
// more than WindowSize needs lets the ring slide a whole word at a time
// without forgetting any sequence number inside the window.

const (
	// WindowSize is how far below the highest accepted sequence number
	// a datagram may still be accepted, if it was not seen before.
	WindowSize = 1024

	windowWords = WindowSize/64 + 1
	windowBits  = windowWords * 64
)

// window is an RFC 6479 sliding replay window. The zero value is empty
// and accepts sequence number 0. It is not safe for concurrent use.
type window struct {
	top  uint64 // highest accepted sequence number (0 when none yet)
	bits [windowWords]uint64
}

// check reports whether seq may be accepted, without changing anything.
func (w *window) check(seq uint64) bool {
	if seq > w.top {
		return true
	}
	if w.top-seq >= WindowSize {
		return false
	}
	return w.bits[(seq/64)%windowWords]&(1<<(seq%64)) == 0
}

// accept marks seq as seen if check allows it, sliding the window
// forward when seq is above the top; it reports whether it did.
func (w *window) accept(seq uint64) bool {
	if !w.check(seq) {
		return false
	}
	if seq > w.top {
		cur, next := w.top/64, seq/64
		n := next - cur
		if n > windowWords {
			n = windowWords
		}
		for i := uint64(1); i <= n; i++ {
			w.bits[(cur+i)%windowWords] = 0
		}
		w.top = seq
	}
	w.bits[(seq/64)%windowWords] |= 1 << (seq % 64)
	return true
}
