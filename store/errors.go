package store

import "errors"

// ErrNotFound is returned (wrapped) by the Get and Update calls when the
// record does not exist, has expired, or its id is not a valid id.
var ErrNotFound = errors.New("store: not found")

// ErrExists is returned (wrapped) by CreateRoom, CreateSession and
// PutJoinTicket when the id is taken.
var ErrExists = errors.New("store: already exists")

// ErrConflict is returned (wrapped) by the Update calls when the record
// kept changing under them for Config.MaxRetries attempts.
var ErrConflict = errors.New("store: too many concurrent updates")

// ErrNodeUnavailable is returned (wrapped) by [SendCommand] when no node
// serves the subject or the node did not answer in time.
var ErrNodeUnavailable = errors.New("store: game node unavailable")

// ErrInvalidID is returned (wrapped) by the Create and Put calls when an id
// is empty, longer than MaxIDLength, or has a character outside
// [A-Za-z0-9_-].
var ErrInvalidID = errors.New("store: invalid id")

// ErrTooLarge is returned (wrapped) by every write whose JSON record is
// larger than Config.MaxRecordBytes.
var ErrTooLarge = errors.New("store: record too large")

// ErrInvalidPageToken is returned (wrapped) by ListRooms for a page token
// it did not issue.
var ErrInvalidPageToken = errors.New("store: invalid page token")
