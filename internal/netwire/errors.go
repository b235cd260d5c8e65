package netwire

import "errors"

// ErrClosed is returned by [Wire.Serve] after [Wire.Close], and by Serve on
// a closed wire.
var ErrClosed = errors.New("netwire: closed")

// ErrInvalidConfig is returned (wrapped) by [New] when a field is out of
// range: a negative duration, a loss outside [0, 1], a limit or packet size
// outside its bounds.
var ErrInvalidConfig = errors.New("netwire: invalid config")

// ErrServing is returned by [Wire.Serve] when the wire already serves.
var ErrServing = errors.New("netwire: already serving")
