package roomwire

// StateName returns the protocol's name of a room state (WELCOME.room_state,
// ROOM_STATE.state): "waiting", "playing" or "ending", or "unknown".
func StateName(state uint8) string {
	switch state {
	case StateWaiting:
		return "waiting"
	case StatePlaying:
		return "playing"
	case StateEnding:
		return "ending"
	}
	return "unknown"
}

// MemberKindName returns the protocol's name of a MEMBER kind: "online",
// "offline" or "left", or "unknown".
func MemberKindName(kind uint8) string {
	switch kind {
	case MemberOnline:
		return "online"
	case MemberOffline:
		return "offline"
	case MemberLeft:
		return "left"
	}
	return "unknown"
}

// SyncModeName returns the protocol's name of a sync mode
// (WELCOME.sync_mode): "frame" or "relay", or "unknown".
func SyncModeName(mode uint8) string {
	switch mode {
	case SyncFrame:
		return "frame"
	case SyncRelay:
		return "relay"
	}
	return "unknown"
}
