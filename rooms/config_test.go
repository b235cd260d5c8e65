package rooms_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/rooms"
)

func TestDefaults(t *testing.T) {
	e, err := rooms.New(rooms.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := e.EffectiveConfig()
	tests := []struct {
		name      string
		got, want any
	}{
		{"Retention", c.Retention, rooms.DefaultRetention},
		{"ConnectTimeout", c.ConnectTimeout, rooms.DefaultConnectTimeout},
		{"CloseLinger", c.CloseLinger, rooms.DefaultCloseLinger},
		{"Housekeeping", c.Housekeeping, rooms.DefaultHousekeeping},
		{"MaxRooms", c.MaxRooms, rooms.DefaultMaxRooms},
		{"FrameReqWindow", c.FrameReqWindow, rooms.DefaultFrameReqWindow},
		{"RateLimitSeconds", c.RateLimitSeconds, rooms.DefaultRateLimitSeconds},
		{"Workers", c.Workers, runtime.GOMAXPROCS(0)},
		{"CustomRate", c.CustomRate, rooms.DefaultCustomRate},
		{"CustomBurst", c.CustomBurst, rooms.DefaultCustomBurst},
		{"CustomByteRate", c.CustomByteRate, rooms.DefaultCustomByteRate},
		{"CustomByteBurst", c.CustomByteBurst, rooms.DefaultCustomByteBurst},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if c.Now == nil || c.Logger == nil {
		t.Error("Now or Logger not set")
	}
	r, err := e.Open(rooms.RoomConfig{ID: "d", SyncMode: rooms.SyncFrame, TickRate: 10, MaxPlayers: 2, StartMode: rooms.StartAuto})
	if err != nil {
		t.Fatal(err)
	}
	if rc := r.Config(); rc.ReconnectWindow != rooms.DefaultReconnectWindow || rc.MaxDuration != rooms.DefaultMaxDuration || rc.CreatedAt.IsZero() {
		t.Errorf("room defaults %+v", rc)
	}
	bad := []rooms.Config{
		{Workers: -1},
		{Retention: rooms.MaxRetention + time.Second},
		{FrameReqWindow: rooms.MaxFrameReqWindow + time.Second},
		{CustomRate: -1},
		{CustomBurst: rooms.MaxCustomLimit + 1},
		{CustomByteRate: rooms.MaxCustomLimit + 1},
		{CustomByteBurst: 1023}, // a 1024-byte CUSTOM could never pass
	}
	for _, cfg := range bad {
		if _, err := rooms.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if _, err := rooms.New(rooms.Config{Retention: rooms.MaxRetention, FrameReqWindow: rooms.MaxFrameReqWindow, CustomByteBurst: rooms.MaxCustomLimit}); err != nil {
		t.Errorf("limits at their maximum: %v", err)
	}
}
