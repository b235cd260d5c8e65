package certs

import "errors"

// ErrNoCertificate is returned (wrapped) by [Load] and [Store.Reload]
// when a file holds no PEM certificate, and by [Load] when a file name is
// empty.
var ErrNoCertificate = errors.New("certs: no certificate")
