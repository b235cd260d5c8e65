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
// whose type is none of the twelve (4, 5, 7, 13–127 and 130–255). It does not match
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
	ProblemBadEvent      = "bad_event"       // a PEER_EVENT event other than 0, 1, 2
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

	TypePeersSubscribe: {{"allocation_id", AllocationIDSize}},
	TypePeerEvent:      {{"event", 1}, {"peer_allocation_id", AllocationIDSize}},
}

// typeErrs holds the FieldErrors a decoder of one type (or Peek, for
// TypeNone) can return, built once and never modified, so that failing
// allocates nothing and costs no lookup.
type typeErrs struct {
	sigTruncated, badSignature *FieldError
	verTruncated, badVersion   *FieldError
	typeTruncated, wrongType   *FieldError
	truncated                  []*FieldError // per field of bodies[t]
	trailing                   *FieldError
}

// errTable is indexed by type; nil for the types that are not defined.
var errTable = buildErrTable()

func buildErrTable() *[256]*typeErrs {
	var table [256]*typeErrs
	for i := range table {
		t := Type(i)
		if !t.Known() && t != TypeNone {
			continue
		}
		fe := func(field, problem string) *FieldError { return &FieldError{Type: t, Field: field, Problem: problem} }
		e := &typeErrs{
			sigTruncated: fe("signature", ProblemTruncated), badSignature: fe("signature", ProblemBadSignature),
			verTruncated: fe("version", ProblemTruncated), badVersion: fe("version", ProblemBadVersion),
			typeTruncated: fe("type", ProblemTruncated), wrongType: fe("type", ProblemWrongType),
			trailing: fe("message", ProblemTrailing),
		}
		if t != TypeNone {
			for _, f := range bodies[t] {
				e.truncated = append(e.truncated, fe(f.name, ProblemTruncated))
			}
		}
		table[i] = e
	}
	return &table
}

// The errors of field values.
var (
	errBindAcceptMode   = &FieldError{TypeBind, "accept_mode", ProblemBadAcceptMode}
	errBindPadding      = &FieldError{TypeBind, "connection_data", ProblemBadPadding}
	errConnectPadding   = &FieldError{TypeConnectRequest, "to_connection_data", ProblemBadPadding}
	errRelayOverCap     = &FieldError{TypeRelay, "data", ProblemOverCap}
	errPeerEventKind    = &FieldError{TypePeerEvent, "event", ProblemBadEvent}
	errRelayDataTrunc   = errTable[TypeRelay].truncated[3]
	errRelayDataTrailer = errTable[TypeRelay].trailing
)
