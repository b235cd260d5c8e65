// Package e2e holds end-to-end tests of the switchboard binary: they build
// it (or take $SWITCHBOARD_BIN), start it as real processes on 127.0.0.1
// with port 0 everywhere, read --ready-file, and play through the public
// APIs with the Go SDK.
package e2e
