package roomwire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
)

// TestEncoderRejectsOverCap checks that no encoder emits what a strict
// decoder would reject: one past each cap, and bad UTF-8 in strings.
func TestEncoderRejectsOverCap(t *testing.T) {
	over := func(n int) []byte { return make([]byte, n+1) }
	overS := func(n int) string { return strings.Repeat("a", n+1) }
	tickFrames := func(n int) []roomwire.TickFrame { return make([]roomwire.TickFrame, n) }
	tests := []struct {
		name    string
		msg     roomwire.Message
		field   string
		problem string
	}{
		{"hello sdk_version 65", &roomwire.Hello{SDKVersion: overS(roomwire.MaxSDKVersionLen)}, "sdk_version", roomwire.ProblemOverCap},
		{"hello sdk_version not utf8", &roomwire.Hello{SDKVersion: "\xff"}, "sdk_version", roomwire.ProblemBadUTF8},
		{"welcome 17 members", &roomwire.Welcome{Members: make([]roomwire.MemberInfo, roomwire.MaxMembers+1)}, "members", roomwire.ProblemOverCap},
		{"welcome username 65", &roomwire.Welcome{Members: []roomwire.MemberInfo{{Username: overS(roomwire.MaxUsernameLen)}}}, "username", roomwire.ProblemOverCap},
		{"welcome username not utf8", &roomwire.Welcome{Members: []roomwire.MemberInfo{{Username: "a\xc0\x80"}}}, "username", roomwire.ProblemBadUTF8},
		{"welcome resume_token 257", &roomwire.Welcome{ResumeToken: over(roomwire.MaxResumeTokenLen)}, "resume_token", roomwire.ProblemOverCap},
		{"input data 129", &roomwire.Input{Data: over(roomwire.MaxInputLen)}, "data", roomwire.ProblemOverCap},
		{"frame 4 frames", &roomwire.Frame{Frames: tickFrames(roomwire.MaxFramesPerFrame + 1)}, "frames", roomwire.ProblemOverCap},
		{"frame input 129", &roomwire.Frame{Frames: []roomwire.TickFrame{{Inputs: []roomwire.SeatInput{{Data: over(roomwire.MaxInputLen)}}}}}, "data", roomwire.ProblemOverCap},
		{"frame 256 inputs", &roomwire.Frame{Frames: []roomwire.TickFrame{{Inputs: make([]roomwire.SeatInput, 256)}}}, "inputs", roomwire.ProblemOverCap},
		{"frame_batch 301 frames", &roomwire.FrameBatch{Frames: tickFrames(roomwire.MaxFramesPerBatch + 1)}, "frames", roomwire.ProblemOverCap},
		{"frame_batch input 129", &roomwire.FrameBatch{Frames: []roomwire.TickFrame{{}, {Inputs: []roomwire.SeatInput{{}, {Data: over(roomwire.MaxInputLen)}}}}}, "data", roomwire.ProblemOverCap},
		{"custom data 1025", &roomwire.Custom{Data: over(roomwire.MaxCustomLen)}, "data", roomwire.ProblemOverCap},
		{"room_state reason 65", &roomwire.RoomState{Reason: overS(roomwire.MaxReasonLen)}, "reason", roomwire.ProblemOverCap},
		{"room_state reason not utf8", &roomwire.RoomState{Reason: "\xed\xa0\x80"}, "reason", roomwire.ProblemBadUTF8},
		{"room_state result 16385", &roomwire.RoomState{Result: over(roomwire.MaxResultLen)}, "result", roomwire.ProblemOverCap},
		{"member username 65", &roomwire.Member{Username: overS(roomwire.MaxUsernameLen)}, "username", roomwire.ProblemOverCap},
		{"member reason 65", &roomwire.Member{Reason: overS(roomwire.MaxReasonLen)}, "reason", roomwire.ProblemOverCap},
		{"member reason not utf8", &roomwire.Member{Reason: "\x80"}, "reason", roomwire.ProblemBadUTF8},
		{"snapshot_put data 65537", &roomwire.SnapshotPut{Data: over(roomwire.MaxSnapshotLen)}, "data", roomwire.ProblemOverCap},
		{"snapshot data 65537", &roomwire.Snapshot{Data: over(roomwire.MaxSnapshotLen)}, "data", roomwire.ProblemOverCap},
		{"error message 257", &roomwire.Error{Message: overS(roomwire.MaxErrorMessageLen)}, "message", roomwire.ProblemOverCap},
		{"error reason 65", &roomwire.Error{Reason: overS(roomwire.MaxReasonLen)}, "reason", roomwire.ProblemOverCap},
		{"error result 16385", &roomwire.Error{Result: over(roomwire.MaxResultLen)}, "result", roomwire.ProblemOverCap},
		{"error message not utf8", &roomwire.Error{Message: "\xff\xfe"}, "message", roomwire.ProblemBadUTF8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte{1, 2, 3}
			b, err := roomwire.Append(prefix, tc.msg)
			fe := wantFieldError(t, err, tc.field, tc.problem)
			if fe.Type != tc.msg.Type() {
				t.Errorf("FieldError.Type = %s, want %s", fe.Type, tc.msg.Type())
			}
			if !bytes.Equal(b, prefix) {
				t.Errorf("on error got b = %x, want it unchanged %x", b, prefix)
			}
		})
	}
}

// TestEncoderAcceptsCaps checks the other side of each cap: exactly at it,
// every message encodes and decodes back.
func TestEncoderAcceptsCaps(t *testing.T) {
	at := func(n int) []byte { return bytes.Repeat([]byte{0xA5}, n) }
	atS := func(n int) string { return strings.Repeat("a", n) }
	members := make([]roomwire.MemberInfo, roomwire.MaxMembers)
	for i := range members {
		members[i].Username = atS(roomwire.MaxUsernameLen)
	}
	full := make([]roomwire.SeatInput, 255)
	for i := range full {
		full[i].Data = at(roomwire.MaxInputLen)
	}
	msgs := []roomwire.Message{
		&roomwire.Hello{SDKVersion: atS(roomwire.MaxSDKVersionLen)},
		&roomwire.Welcome{Members: members, ResumeToken: at(roomwire.MaxResumeTokenLen)},
		&roomwire.Input{Data: at(roomwire.MaxInputLen)},
		&roomwire.Frame{Frames: []roomwire.TickFrame{{Inputs: full}, {Number: 1}, {Number: 2}}},
		&roomwire.FrameBatch{Frames: make([]roomwire.TickFrame, roomwire.MaxFramesPerBatch)},
		&roomwire.Custom{Data: at(roomwire.MaxCustomLen)},
		&roomwire.RoomState{Reason: atS(roomwire.MaxReasonLen), Result: at(roomwire.MaxResultLen)},
		&roomwire.Member{Username: atS(roomwire.MaxUsernameLen), Reason: atS(roomwire.MaxReasonLen)},
		&roomwire.SnapshotPut{Data: at(roomwire.MaxSnapshotLen)},
		&roomwire.Snapshot{Data: at(roomwire.MaxSnapshotLen)},
		&roomwire.Error{Message: atS(roomwire.MaxErrorMessageLen), Reason: atS(roomwire.MaxReasonLen), Result: at(roomwire.MaxResultLen)},
	}
	for _, m := range msgs {
		t.Run(m.Type().String(), func(t *testing.T) {
			b, err := roomwire.Append(nil, m)
			if err != nil {
				t.Fatalf("Append at cap: %v", err)
			}
			d, err := roomwire.Decode(b)
			if err != nil {
				t.Fatalf("Decode at cap: %v", err)
			}
			re, err := roomwire.Append(nil, d)
			if err != nil || !bytes.Equal(re, b) {
				t.Errorf("re-encode at cap: err %v, equal %v", err, bytes.Equal(re, b))
			}
		})
	}
}

func TestAppendHandshakeRejects(t *testing.T) {
	hello := &roomwire.Hello{ClientNonce: 1, SDKVersion: "go/1"}
	resume := &roomwire.Resume{ClientNonce: 1, LastFrame: 2}
	tests := []struct {
		name    string
		kind    roomwire.HandshakeKind
		token   []byte
		msg     roomwire.Message
		field   string
		problem string
	}{
		{"kind 0", 0, nil, hello, "kind", roomwire.ProblemBadKind},
		{"kind 3", 3, nil, resume, "kind", roomwire.ProblemBadKind},
		{"hello kind with resume", roomwire.KindHello, nil, resume, "message", roomwire.ProblemKindMismatch},
		{"resume kind with hello", roomwire.KindResume, nil, hello, "message", roomwire.ProblemKindMismatch},
		{"hello kind with ready", roomwire.KindHello, nil, &roomwire.Ready{}, "message", roomwire.ProblemKindMismatch},
		{"nil message", roomwire.KindHello, nil, nil, "message", roomwire.ProblemKindMismatch},
		{"connect ticket 1025", roomwire.KindHello, make([]byte, roomwire.MaxConnectTicketLen+1), hello, "token", roomwire.ProblemTokenTooLong},
		{"resume token 257", roomwire.KindResume, make([]byte, roomwire.MaxResumeTokenLen+1), resume, "token", roomwire.ProblemTokenTooLong},
		{"hello over cap inside", roomwire.KindHello, []byte("AQ3k"), &roomwire.Hello{SDKVersion: strings.Repeat("v", 65)}, "sdk_version", roomwire.ProblemOverCap},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte{9}
			b, err := roomwire.AppendHandshake(prefix, tc.kind, tc.token, tc.msg)
			wantFieldError(t, err, tc.field, tc.problem)
			if !bytes.Equal(b, prefix) {
				t.Errorf("on error got b = %x, want it unchanged %x", b, prefix)
			}
		})
	}
	// At the caps the handshake encodes and parses.
	for _, tc := range []struct {
		kind  roomwire.HandshakeKind
		token []byte
		msg   roomwire.Message
	}{
		{roomwire.KindHello, make([]byte, roomwire.MaxConnectTicketLen), hello},
		{roomwire.KindResume, make([]byte, roomwire.MaxResumeTokenLen), resume},
	} {
		b, err := roomwire.AppendHandshake(nil, tc.kind, tc.token, tc.msg)
		if err != nil {
			t.Fatalf("kind %d at token cap: %v", tc.kind, err)
		}
		if _, err := roomwire.ParseHandshake(b); err != nil {
			t.Errorf("kind %d at token cap: parse: %v", tc.kind, err)
		}
	}
}

func TestErrorIsAnError(t *testing.T) {
	var err error = &roomwire.Error{Code: roomwire.CodeKicked, Reason: "cheating"}
	var e *roomwire.Error
	if !errors.As(err, &e) || e.Code != roomwire.CodeKicked {
		t.Fatalf("errors.As(%v) = %v", err, e)
	}
	if errors.Is(err, roomwire.ErrInvalid) {
		t.Error("a node ERROR must not match ErrInvalid")
	}
}
