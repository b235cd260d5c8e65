package p2p

import (
	"time"

	"github.com/switchboardgg/switchboard/internal/kcploop"
	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// Channel is a reliable channel (docs/protocol/p2p.md §13). Each has its
// own KCP conversation per pair of peers, so a large transfer on one never
// holds up another.
type Channel = p2pwire.Channel

// The reliable channels.
const (
	// Ch1 uses KCP's standard timers: for bulk data (files, state).
	Ch1 = p2pwire.Ch1
	// Ch2 is a second channel with Ch1's settings, independent of it.
	Ch2 = p2pwire.Ch2
	// Realtime uses KCP's no-delay mode (30 ms minimum retransmission
	// timeout, 10 ms flushes): for small messages that must arrive soon.
	Realtime = p2pwire.Realtime
)

// ReliableMessage is an envelope another peer sent on a reliable channel.
// Its fields are the receiver's to keep.
type ReliableMessage struct {
	// From is the sender's peer id.
	From string
	// Channel is the channel it came on.
	Channel Channel
	Envelope
}

// Defaults of [ReliableConfig].
const (
	// DefaultReliableMaxMessage is the largest encoded envelope a
	// reliable send accepts: 64 KiB.
	DefaultReliableMaxMessage = 64 << 10
	// DefaultReliableIdleTimeout is how long a conversation may carry
	// nothing before it is closed.
	DefaultReliableIdleTimeout = 2 * time.Minute
	// DefaultReliableQueueLen is the capacity of [Peer.Reliable].
	DefaultReliableQueueLen = 32
	// DefaultReliableMaxConversations bounds the open conversations of a
	// peer: 3 channels × 256 peers (the hub's default network cap).
	DefaultReliableMaxConversations = 768
)

// The KCP settings of the channels (docs/protocol/p2p.md §13). Both
// peers of a conversation use the same ones.
const (
	// ReliableMTU is KCP's MTU: the RELIABLE body (channel byte and
	// segment) is at most 1,104 bytes (§11), so a segment is at most
	// 1,103 bytes, of which 24 are KCP's header.
	ReliableMTU = p2pwire.MaxRoutedRest - 1
	// BulkWindow is the send and receive window of Ch1 and Ch2, in
	// segments; RealtimeWindow Realtime's.
	BulkWindow     = 256
	RealtimeWindow = 128
	// BulkSendQueue and RealtimeSendQueue are the most segments a
	// conversation holds queued or unacknowledged (about 552 KB and
	// 276 KB) before a reliable send waits.
	BulkSendQueue     = 512
	RealtimeSendQueue = 256
	// BulkInterval and RealtimeInterval are KCP's flush intervals.
	BulkInterval     = 20 * time.Millisecond
	RealtimeInterval = 10 * time.Millisecond
)

// maxReliableMessage is the largest message a channel's receive window
// can reassemble: KCP fragments a message into at most 255 segments,
// and they must all fit in the receive window.
const maxReliableMessage = RealtimeWindow * (ReliableMTU - kcploop.Overhead)

// ReliableConfig configures the reliable channels of a [Peer]. The zero
// value works; every zero field takes the default named in its comment.
type ReliableConfig struct {
	// MaxMessage is the largest encoded envelope (docs/protocol/p2p.md
	// §7) a reliable send accepts, in bytes. Zero means
	// DefaultReliableMaxMessage; a larger value than 138,112 (what
	// Realtime's receive window reassembles) means 138,112. Both peers
	// should use the same value: a message over the receiver's is
	// dropped by it.
	MaxMessage int
	// IdleTimeout closes a conversation that has carried nothing (no
	// message queued, unacknowledged or unread, no segment either way)
	// for this long. Zero means DefaultReliableIdleTimeout.
	IdleTimeout time.Duration
	// QueueLen is the capacity of [Peer.Reliable]. Zero means
	// DefaultReliableQueueLen.
	QueueLen int
	// MaxConversations bounds the conversations open at once; a send or
	// a segment that would open one more is refused. Zero means
	// DefaultReliableMaxConversations.
	MaxConversations int
}

func (c ReliableConfig) resolve() ReliableConfig {
	if c.MaxMessage <= 0 {
		c.MaxMessage = DefaultReliableMaxMessage
	}
	c.MaxMessage = min(c.MaxMessage, maxReliableMessage)
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultReliableIdleTimeout
	}
	if c.QueueLen <= 0 {
		c.QueueLen = DefaultReliableQueueLen
	}
	if c.MaxConversations <= 0 {
		c.MaxConversations = DefaultReliableMaxConversations
	}
	return c
}

// convConfig returns the KCP settings of channel ch.
func (c ReliableConfig) convConfig(ch Channel) kcploop.ConvConfig {
	if ch == Realtime {
		return kcploop.ConvConfig{MTU: ReliableMTU, SendWindow: RealtimeWindow, RecvWindow: RealtimeWindow,
			SendQueue: RealtimeSendQueue, MaxMessage: c.MaxMessage, NoDelay: true, Interval: RealtimeInterval}
	}
	return kcploop.ConvConfig{MTU: ReliableMTU, SendWindow: BulkWindow, RecvWindow: BulkWindow,
		SendQueue: BulkSendQueue, MaxMessage: c.MaxMessage, Interval: BulkInterval}
}

// ReliableStats counts what the reliable channels of a peer did.
type ReliableStats struct {
	// Conversations is the number open now.
	Conversations int
	// Opened and Reaped count conversations opened and closed for being
	// idle; Closed those closed because their peer left.
	Opened, Reaped, Closed uint64
	// Restarted counts conversations replaced because the other peer
	// started a new incarnation of it (it had closed its own as idle).
	// Resent counts those of them that held messages sent as the other
	// peer was closing its side, which went again on the new incarnation;
	// Lost those that held unacknowledged messages without a copy (none
	// is expected: docs/protocol/p2p.md §13), which were dropped.
	Restarted, Resent, Lost uint64
	// Dropped counts segments dropped: not KCP, a channel mismatch, an
	// old incarnation, over MaxConversations, or an envelope that did
	// not decode.
	Dropped uint64
}
