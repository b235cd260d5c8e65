package p2pwire

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched (through errors.Is) by every [*FieldError]: the bytes
// are not a valid p2p frame, message or datagram. The hub answers an invalid
// frame on the TLS link with ERROR malformed and closes the connection; it
// drops an invalid datagram without an answer.
var ErrInvalid = errors.New("p2pwire: invalid message")

// ErrUnsupportedVersion is matched, besides [ErrInvalid], by the
// [*FieldError] of a HELLO or WELCOME whose version is not [Version].
var ErrUnsupportedVersion = errors.New("p2pwire: unsupported protocol version")

// ErrUnknownKind is returned by [DecodeRouting] and [Decode] for a kind byte
// this version does not define. It does not match [ErrInvalid]; a hub closes
// the connection (ERROR malformed), a peer ignores the frame.
var ErrUnknownKind = errors.New("p2pwire: unknown message kind")

// ErrFrameTooLarge is returned by [ParseFrameLength] and [ReadFrame] when a
// frame's length prefix is over the reader's maximum, before any of the body
// is read, and by [AppendFrame] for a body over [MaxFrameSize]. It matches
// [ErrInvalid].
var ErrFrameTooLarge = &FieldError{Field: "frame_length", Problem: ProblemTooLarge}

// Problems a [FieldError] reports. They are the "reason" strings of the
// invalid items in testdata/p2pwire/*.json.
const (
	ProblemTruncated   = "truncated"      // the field runs past the end
	ProblemTrailing    = "trailing_bytes" // bytes after the last field
	ProblemOverCap     = "over_cap"       // a length or count over the field's cap
	ProblemTooLarge    = "too_large"      // a frame or datagram over its maximum size
	ProblemEmpty       = "empty"          // a present field, length or count that is zero where that is not allowed
	ProblemBadUTF8     = "bad_utf8"       // a string that is not valid UTF-8
	ProblemBadPeerID   = "bad_peer_id"    // a peer id byte outside A-Z a-z 0-9 _ . - ~
	ProblemBadFlags    = "bad_flags"      // a flag bit that is undefined, or a combination the kind does not allow
	ProblemMissing     = "missing"        // a field the kind requires is absent
	ProblemBadVersion  = "bad_version"    // a version other than Version
	ProblemNotAscend   = "not_ascending"  // a list entry not strictly after the previous one
	ProblemBadValue    = "bad_value"      // an enumerated value this version does not define, or a zero where zero is reserved
	ProblemBadMarker   = "bad_marker"     // a datagram whose first byte is not a p2pwire marker
	ProblemBadSize     = "bad_size"       // a size that contradicts another field (jumbo chunk length, secret length)
	ProblemWrongKind   = "wrong_kind"     // the kind byte is not the one the decoder was asked for
	ProblemBadEndpoint = "bad_endpoint"   // an address family other than 4 or 6, a v4-mapped v6 address or port 0
)

// FieldError reports why bytes are not valid. It matches [ErrInvalid] with
// errors.Is, and [ErrUnsupportedVersion] too when the problem is
// bad_version.
//
// The routing-header errors ([DecodeRouting]) and the framing errors are
// shared values, so that rejecting a frame allocates nothing: compare them,
// do not modify them.
type FieldError struct {
	Kind    Kind   // the kind being decoded or encoded; KindNone for the frame, the routing header and the datagram prefix
	Field   string // the field as docs/protocol/p2p.md names it, e.g. "to"; "message" for trailing bytes
	Problem string // one of the Problem constants
}

func (e *FieldError) Error() string {
	if e.Kind == KindNone {
		return fmt.Sprintf("p2pwire: %s: %s", e.Field, e.Problem)
	}
	return fmt.Sprintf("p2pwire: %s: %s: %s", e.Kind, e.Field, e.Problem)
}

// Is reports whether target is [ErrInvalid], or [ErrUnsupportedVersion] for
// a bad version.
func (e *FieldError) Is(target error) bool {
	return target == ErrInvalid || target == ErrUnsupportedVersion && e.Problem == ProblemBadVersion
}

func fieldErr(k Kind, field, problem string) error {
	return &FieldError{Kind: k, Field: field, Problem: problem}
}

// The shared errors of the routing header, the frame and the datagram
// prefix: returned by the allocation-free decoders.
var (
	errKindTruncated  = &FieldError{Field: "kind", Problem: ProblemTruncated}
	errFlagsTruncated = &FieldError{Field: "route_flags", Problem: ProblemTruncated}
	errFlagsBad       = &FieldError{Field: "route_flags", Problem: ProblemBadFlags}
	errToTruncated    = &FieldError{Field: "to", Problem: ProblemTruncated}
	errToEmpty        = &FieldError{Field: "to", Problem: ProblemEmpty}
	errToOverCap      = &FieldError{Field: "to", Problem: ProblemOverCap}
	errToBad          = &FieldError{Field: "to", Problem: ProblemBadPeerID}
	errFromTruncated  = &FieldError{Field: "from", Problem: ProblemTruncated}
	errFromEmpty      = &FieldError{Field: "from", Problem: ProblemEmpty}
	errFromOverCap    = &FieldError{Field: "from", Problem: ProblemOverCap}
	errFromBad        = &FieldError{Field: "from", Problem: ProblemBadPeerID}

	errFrameTruncated = &FieldError{Field: "frame_length", Problem: ProblemTruncated}
	errFrameEmpty     = &FieldError{Field: "frame_length", Problem: ProblemEmpty}

	errMarkerTruncated = &FieldError{Field: "marker", Problem: ProblemTruncated}
	errMarkerBad       = &FieldError{Field: "marker", Problem: ProblemBadMarker}
	errKeyIDTruncated  = &FieldError{Field: "key_id", Problem: ProblemTruncated}
	errKeyIDZero       = &FieldError{Field: "key_id", Problem: ProblemBadValue}
	errSeqTruncated    = &FieldError{Field: "seq", Problem: ProblemTruncated}
	errSealedShort     = &FieldError{Field: "sealed", Problem: ProblemTruncated}
	errDatagramLarge   = &FieldError{Field: "datagram", Problem: ProblemTooLarge}
)
