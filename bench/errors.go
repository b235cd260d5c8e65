package bench

import "errors"

// ErrPlayersFailed is returned by [RunRooms], with the result of the run,
// when players failed to join or play, or frames arrived out of order; the
// result's Failures say why, counted by reason.
var ErrPlayersFailed = errors.New("bench: players failed")
