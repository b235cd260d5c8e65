package control

import "errors"

// ErrConfig is returned (wrapped) by [New] when a required field of Config
// is missing or invalid.
var ErrConfig = errors.New("control: invalid config")
