package api

// Error codes: error.code of the error envelope (rooms spec §2). Each code
// has one HTTP status, [StatusOf].
const (
	CodeInvalidArgument  = "invalid_argument"  // 400
	CodeUnauthenticated  = "unauthenticated"   // 401
	CodePermissionDenied = "permission_denied" // 403
	CodeNotFound         = "not_found"         // 404
	CodeConflict         = "conflict"          // 409
	CodeRateLimited      = "rate_limited"      // 429
	CodeInternal         = "internal"          // 500
	CodeUnavailable      = "unavailable"       // 503
)

// Reasons: error.details.reason, which says which of several errors of one
// code happened. Match on them, never on messages.
const (
	// ReasonRoomNotOpen (409): the room is closing or closed.
	ReasonRoomNotOpen = "room_not_open"
	// ReasonRoomFull (409, C1): no free seat.
	ReasonRoomFull = "room_full"
	// ReasonSeatTaken (409, C1): the seat the ticket names is held.
	ReasonSeatTaken = "seat_taken"
	// ReasonJoinedOnOtherDevice (409, C1): another login session of the
	// same user holds a seat in the room.
	ReasonJoinedOnOtherDevice = "joined_on_other_device"
	// ReasonGameNodeUnavailable (503): no game node can run the room, or
	// its node did not answer.
	ReasonGameNodeUnavailable = "game_node_unavailable"
	// ReasonNotManual (409, start): the room's start mode is not manual.
	ReasonNotManual = "not_manual"
	// ReasonAlreadyStarted (409, start): the room has started.
	ReasonAlreadyStarted = "already_started"
	// ReasonBodyTooLarge (400): the request body is over the limit.
	ReasonBodyTooLarge = "body_too_large"
	// ReasonNodeDraining (409 or 503 from a node's answer): the node is
	// draining and takes no new room or seat.
	ReasonNodeDraining = "node_draining"
	// ReasonNodeFull (503 from a node's answer): the node runs as many
	// rooms or connections as it may.
	ReasonNodeFull = "node_full"
)

// ErrorBody is the error envelope every error answer of every route has:
//
//	{"error": {"code": "conflict", "message": "room is full", "details": {"reason": "room_full"}}}
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is the "error" member of [ErrorBody].
type ErrorObject struct {
	Code    string        `json:"code"`
	Message string        `json:"message"`
	Details *ErrorDetails `json:"details,omitempty"` // nil: no reason
}

// ErrorDetails is the optional "details" member of [ErrorObject].
type ErrorDetails struct {
	Reason string `json:"reason"`
}

// StatusOf returns the HTTP status of an error code, and false for a code
// this version does not know.
func StatusOf(code string) (int, bool) {
	switch code {
	case CodeInvalidArgument:
		return 400, true
	case CodeUnauthenticated:
		return 401, true
	case CodePermissionDenied:
		return 403, true
	case CodeNotFound:
		return 404, true
	case CodeConflict:
		return 409, true
	case CodeRateLimited:
		return 429, true
	case CodeInternal:
		return 500, true
	case CodeUnavailable:
		return 503, true
	}
	return 0, false
}
