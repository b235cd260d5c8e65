package relaywire

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched (through errors.Is) by every [*FieldError]: the
// bytes are not a valid message. A relay drops such a datagram without an
// answer, except that it may answer a bad version with ERROR 0.
var ErrInvalid = errors.New("relaywire: invalid message")

// ErrUnsupportedVersion is matched, besides [ErrInvalid], by the
// [*FieldError] of a message whose header has the right signature but a
// version other than 0, the case ERROR code 0 (invalid protocol version)
// names.
var ErrUnsupportedVersion = errors.New("relaywire: unsupported protocol version")

// ErrUnknownType is returned by [Peek] and [Decode] for a well-formed header
// whose type is none of the ten (4, 5, 7 and 13–255). It does not match
// [ErrInvalid]; a relay drops the datagram.
var ErrUnknownType = errors.New("relaywire: unknown message type")

// ErrConnectionDataTooLong is returned by [NewConnectionData] for a blob
// over ConnectionDataSize bytes.
var ErrConnectionDataTooLong = errors.New("relaywire: connection data over 255 bytes")

// ErrBadAllocationID is returned by [ParseAllocationID] and
// [AllocationID.UnmarshalText] for text that is not a canonical UUID.
var ErrBadAllocationID = errors.New("relaywire: allocation id is not a UUID (8-4-4-4-12 hex digits)")

// ErrBadKey is returned by [NewKey] for a key that is not KeySize bytes.
var ErrBadKey = errors.New("relaywire: allocation key is not 64 bytes")

// Problems a [FieldError] reports. They are the "reason" strings of the
// invalid items in testdata/relaywire/messages.json.
const (
	ProblemTruncated     = "truncated"       // the message ends inside the field
	ProblemTrailing      = "trailing_bytes"  // bytes after the last field
	ProblemBadSignature  = "bad_signature"   // the first two bytes are not DA 72
	ProblemBadVersion    = "bad_version"     // byte 2 is not 0
	ProblemWrongType     = "wrong_type"      // byte 3 is not the type being decoded
	ProblemBadAcceptMode = "bad_accept_mode" // a BIND accept mode other than 0
	ProblemBadPadding    = "bad_padding"     // a non-zero byte after the connection data length
	ProblemOverCap       = "over_cap"        // encoder only: a RELAY payload over MaxRelayPayload
)

// TypeNone is the Type of a [FieldError] that [Peek] or [Decode] found in the
// header, before the message type was known. It is not a message type.
const TypeNone Type = 0xFF

// FieldError reports why bytes are not a valid message. It matches
// [ErrInvalid] with errors.Is, and [ErrUnsupportedVersion] too when the
// problem is bad_version.
//
// Decoders return shared values so that rejecting a datagram allocates
// nothing: compare them, do not modify them.
type FieldError struct {
	Type    Type   // the message type being decoded or encoded, or TypeNone
	Field   string // the field as this package's layouts name it, e.g. "data_length"; "message" for trailing bytes
	Problem string // one of the Problem constants
}

func (e *FieldError) Error() string {
	if e.Type == TypeNone {
		return fmt.Sprintf("relaywire: header: %s: %s", e.Field, e.Problem)
	}
	return fmt.Sprintf("relaywire: %s: %s: %s", e.Type, e.Field, e.Problem)
}

// Is reports whether target is [ErrInvalid], or [ErrUnsupportedVersion] for
// a bad version.
func (e *FieldError) Is(target error) bool {
	return target == ErrInvalid || target == ErrUnsupportedVersion && e.Problem == ProblemBadVersion
}

// field is one field of a layout.
type field struct {
	name string
	size int // 0: the rest of the message (RELAY data)
}

// Header fields, in order.
var headerFields = []field{{"signature", 2}, {"version", 1}, {"type", 1}}

// bodies lists each type's fields after the header, in order.
var bodies = [...][]field{
	TypeBind: {{"accept_mode", 1}, {"nonce", 2}, {"connection_data_length", 1},
		{"connection_data", ConnectionDataSize}, {"hmac", HMACSize}},
	TypeBindReceived: nil,
	TypePing:         {{"from_allocation_id", AllocationIDSize}, {"sequence_number", 2}},
	TypeConnectRequest: {{"allocation_id", AllocationIDSize}, {"to_connection_data_length", 1},
		{"to_connection_data", ConnectionDataSize}},
	TypeAccepted:   {{"from_allocation_id", AllocationIDSize}, {"to_allocation_id", AllocationIDSize}},
	TypeRejected:   {{"from_allocation_id", AllocationIDSize}, {"to_allocation_id", AllocationIDSize}},
	TypeDisconnect: {{"from_allocation_id", AllocationIDSize}, {"to_allocation_id", AllocationIDSize}},
	TypeRelay: {{"from_allocation_id", AllocationIDSize}, {"to_allocation_id", AllocationIDSize},
		{"data_length", 2}, {"data", 0}},
	TypeClose: {{"allocation_id", AllocationIDSize}},
	TypeError: {{"allocation_id", AllocationIDSize}, {"error_code", 1}},
}

type errKey struct {
	t              Type
	field, problem string
}

// fieldErrs holds every FieldError a decoder or encoder can return, built
// once and never modified, so that failing allocates nothing.
var fieldErrs = buildFieldErrs()

func buildFieldErrs() map[errKey]*FieldError {
	problems := []string{ProblemTruncated, ProblemTrailing, ProblemBadSignature, ProblemBadVersion,
		ProblemWrongType, ProblemBadAcceptMode, ProblemBadPadding, ProblemOverCap}
	m := make(map[errKey]*FieldError)
	add := func(t Type, fields []field) {
		for _, f := range append(append(fields[:len(fields):len(fields)], headerFields...), field{name: "message"}) {
			for _, p := range problems {
				m[errKey{t, f.name, p}] = &FieldError{Type: t, Field: f.name, Problem: p}
			}
		}
	}
	add(TypeNone, nil)
	for t, fields := range bodies {
		if Type(t).Known() {
			add(Type(t), fields)
		}
	}
	return m
}

// fieldErr returns the shared FieldError for t, field and problem.
func fieldErr(t Type, field, problem string) error {
	if e, ok := fieldErrs[errKey{t, field, problem}]; ok {
		return e
	}
	return &FieldError{Type: t, Field: field, Problem: problem} // unreachable: every combination is in the table
}
