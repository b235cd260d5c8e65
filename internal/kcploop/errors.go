package kcploop

import "errors"

var (
	// ErrClosed is returned by [Conv] methods after [Conv.Close] or once
	// its [Loop] is closed, by [Loop.Open] on a closed loop, and by
	// [Loop.Run] after [Loop.Close].
	ErrClosed = errors.New("kcploop: closed")
	// ErrInvalidConfig is returned (wrapped) by [New] and [Loop.Open]
	// for an out-of-range field.
	ErrInvalidConfig = errors.New("kcploop: invalid config")
	// ErrSendQueueFull is returned by [Conv.Send] when the conversation
	// already holds ConvConfig.SendQueue segments; try again later.
	ErrSendQueueFull = errors.New("kcploop: send queue full")
	// ErrTooLarge is returned by [Conv.Send] for an empty message or one
	// over ConvConfig.MaxMessage.
	ErrTooLarge = errors.New("kcploop: message empty or too large")
	// ErrNoMessage is returned by [Conv.Recv] when no whole message is
	// waiting.
	ErrNoMessage = errors.New("kcploop: no message waiting")
	// ErrShortBuffer is returned by [Conv.Recv] when the waiting message
	// is longer than the buffer; [Conv.PeekSize] tells its size.
	ErrShortBuffer = errors.New("kcploop: buffer too short")
	// ErrMalformed is returned by [Conv.Input] for a datagram that is not
	// KCP for this conversation (too short, another conversation id, a
	// length beyond the datagram).
	ErrMalformed = errors.New("kcploop: malformed datagram")
)
