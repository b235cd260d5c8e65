package rooms

// frameLog retains the newest frames of a room, each in its wire encoding
// (u32 number, u8 input count, inputs), so that FRAME and FRAME_BATCH
// messages are built by copying bytes.
//
// The encodings live back to back in one circular byte buffer; a record never
// wraps (the tail end of the buffer is skipped instead). An index of
// (offset, length) per retained frame, itself circular, finds them. The
// buffer grows while the room warms up and is reused after that, so appending
// a frame allocates nothing in steady state.
//
// A frameLog is not safe for concurrent use; its Room guards it.
type frameLog struct {
	slots int      // frames retained
	first uint32   // oldest retained frame; 0 when empty
	last  uint32   // newest frame ever appended; 0 before the first
	offs  []uint32 // per slot (frame % slots): offset in data
	lens  []uint16 // per slot: encoded length

	data []byte
	head int // offset of the oldest record
	tail int // offset where the next record goes
	used int // bytes from head to tail, skipped tail ends included
}

func newFrameLog(slots int) *frameLog {
	return &frameLog{slots: slots, offs: make([]uint32, slots), lens: make([]uint16, slots)}
}

// count returns the number of retained frames.
func (l *frameLog) count() int {
	if l.first == 0 {
		return 0
	}
	return int(l.last-l.first) + 1
}

// has reports whether frame n is retained.
func (l *frameLog) has(n uint32) bool {
	return l.first != 0 && n >= l.first && n <= l.last
}

// record returns the encoding of retained frame n.
func (l *frameLog) record(n uint32) []byte {
	s := int(n % uint32(l.slots))
	off := int(l.offs[s])
	return l.data[off : off+int(l.lens[s])]
}

// size returns the total encoded size of retained frames from through to.
func (l *frameLog) size(from, to uint32) int {
	n := 0
	for f := from; f <= to; f++ {
		n += int(l.lens[f%uint32(l.slots)])
	}
	return n
}

// append reserves sz bytes for frame l.last+1, which becomes the newest,
// evicting the oldest frame when the log is full. The caller writes the
// encoding into the returned slice.
func (l *frameLog) append(sz int) []byte {
	if l.count() == l.slots {
		l.evictOldest()
	}
	pos, need := l.reserve(sz)
	if l.used+need > len(l.data) {
		l.grow(sz)
		pos, need = l.reserve(sz)
	}
	l.used += need
	l.tail = pos + sz
	n := l.last + 1
	l.last = n
	if l.first == 0 {
		l.first = n
	}
	s := int(n % uint32(l.slots))
	l.offs[s] = uint32(pos)
	l.lens[s] = uint16(sz)
	return l.data[pos : pos+sz : pos+sz]
}

// reserve returns where a record of sz bytes would go and how many bytes,
// skipped tail end included, it would take.
func (l *frameLog) reserve(sz int) (pos, need int) {
	if l.used == 0 {
		l.head, l.tail = 0, 0
	}
	if l.tail+sz <= len(l.data) {
		return l.tail, sz
	}
	return 0, len(l.data) - l.tail + sz
}

func (l *frameLog) evictOldest() {
	if l.first == l.last {
		l.first = 0
		l.used, l.head, l.tail = 0, 0, 0
		return
	}
	l.first++
	next := int(l.offs[l.first%uint32(l.slots)])
	d := next - l.head
	if d < 0 {
		d += len(l.data)
	}
	l.used -= d
	l.head = next
}

// grow moves the retained records, in order and packed, to a larger buffer
// with room for at least sz more bytes.
func (l *frameLog) grow(sz int) {
	live := 0
	if l.first != 0 {
		live = l.size(l.first, l.last)
	}
	n := (live+sz)*3/2 + 256
	if n < 1024 {
		n = 1024
	}
	data := make([]byte, n)
	pos := 0
	if l.first != 0 {
		for f := l.first; f <= l.last; f++ {
			s := int(f % uint32(l.slots))
			pos += copy(data[pos:], l.data[l.offs[s]:int(l.offs[s])+int(l.lens[s])])
			l.offs[s] = uint32(pos - int(l.lens[s]))
		}
	}
	l.data = data
	l.head, l.tail, l.used = 0, pos, pos
}
