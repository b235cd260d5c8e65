package roomwire

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched (through errors.Is) by every [*FieldError]: the bytes
// are not a valid im.game.v1 message. A node counts it towards the "three
// invalid messages in a row" rule.
var ErrInvalid = errors.New("roomwire: invalid message")

// ErrUnknownType is returned by [Decode] and [Peek] for a message type this
// version of the protocol does not define. It does not match [ErrInvalid]:
// the protocol asks receivers to ignore such messages so that new messages can
// be added later.
var ErrUnknownType = errors.New("roomwire: unknown message type")

// Problems a [FieldError] reports. They are the "reason" strings of the invalid
// items in testdata/roomwire/messages.json.
const (
	ProblemTruncated     = "truncated"      // the field runs past the end of the message
	ProblemOverCap       = "over_cap"       // a length or count exceeds the field's cap
	ProblemBadBool       = "bad_bool"       // a bool byte other than 0 or 1
	ProblemTrailing      = "trailing_bytes" // bytes left after the last field
	ProblemBadUTF8       = "bad_utf8"       // a string that is not valid UTF-8
	ProblemOverlong      = "overlong_varint"
	ProblemWrongType     = "wrong_type"      // the type byte is not the one expected
	ProblemEmpty         = "empty"           // no type byte at all
	ProblemBadKind       = "bad_kind"        // handshake kind other than 1 or 2
	ProblemKindMismatch  = "kind_mismatch"   // handshake kind does not match its message
	ProblemTokenTooLong  = "token_too_long"  // handshake token over its cap
	ProblemOutOfSequence = "out_of_sequence" // encoder only: frames not consecutive where required
)

// FieldError reports why bytes are not a valid message. It matches
// [ErrInvalid] with errors.Is.
type FieldError struct {
	Type    Type   // the message type being decoded or encoded; 0 for the handshake framing and for an empty message
	Field   string // the field name as the protocol spells it, e.g. "sdk_version"
	Problem string // one of the Problem constants
}

func (e *FieldError) Error() string {
	switch {
	case e.Type != 0:
		return fmt.Sprintf("roomwire: %s: %s: %s", e.Type, e.Field, e.Problem)
	case e.Field == "type": // Peek or Decode of an empty message
		return fmt.Sprintf("roomwire: message: %s: %s", e.Field, e.Problem)
	}
	return fmt.Sprintf("roomwire: handshake: %s: %s", e.Field, e.Problem)
}

// Is reports whether target is [ErrInvalid].
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(t Type, field, problem string) error {
	return &FieldError{Type: t, Field: field, Problem: problem}
}
