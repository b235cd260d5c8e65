package roomwire_test

import (
	"testing"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

func TestNames(t *testing.T) {
	tests := []struct {
		name string
		fn   func(uint8) string
		v    uint8
		want string
	}{
		{"StateName", roomwire.StateName, roomwire.StateWaiting, "waiting"},
		{"StateName", roomwire.StateName, roomwire.StatePlaying, "playing"},
		{"StateName", roomwire.StateName, roomwire.StateEnding, "ending"},
		{"StateName", roomwire.StateName, 0, "unknown"},
		{"MemberKindName", roomwire.MemberKindName, roomwire.MemberOnline, "online"},
		{"MemberKindName", roomwire.MemberKindName, roomwire.MemberOffline, "offline"},
		{"MemberKindName", roomwire.MemberKindName, roomwire.MemberLeft, "left"},
		{"MemberKindName", roomwire.MemberKindName, 9, "unknown"},
		{"SyncModeName", roomwire.SyncModeName, roomwire.SyncFrame, "frame"},
		{"SyncModeName", roomwire.SyncModeName, roomwire.SyncRelay, "relay"},
		{"SyncModeName", roomwire.SyncModeName, 0, "unknown"},
	}
	for _, tc := range tests {
		if got := tc.fn(tc.v); got != tc.want {
			t.Errorf("%s(%d) = %q, want %q", tc.name, tc.v, got, tc.want)
		}
	}
}
