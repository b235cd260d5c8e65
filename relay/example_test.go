package relay_test

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
	"github.com/switchboardgg/switchboard/relay"
	"github.com/switchboardgg/switchboard/tokens"
)

// A relay node on a UDP port, and a client binding an allocation that the
// control plane sealed with the same relay secret.
func ExampleServer_ServePacket() {
	secret := make([]byte, 32)
	rand.Read(secret)
	keys, err := tokens.NewRelayKeyring(tokens.RelayKey{ID: 1, Secret: secret})
	if err != nil {
		panic(err)
	}
	s, err := relay.New(relay.Config{Keys: keys, NodeID: "relay-1", BootEpoch: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	done := make(chan error)
	go func() { done <- s.ServePacket(pc) }()
	defer func() {
		s.Close()
		<-done
	}()

	// What the control plane hands out: the sealed blob and the key.
	c := tokens.RelayConnection{NodeID: "relay-1", BootEpoch: 1, Issued: time.Now(), Expires: time.Now().Add(time.Hour), MaxConnections: 4}
	rand.Read(c.AllocationID[:])
	blob, err := keys.Seal(c)
	if err != nil {
		panic(err)
	}
	k, err := keys.AllocationKey(blob[0], c.AllocationID)
	if err != nil {
		panic(err)
	}
	key := relaywire.Key(k)

	// What a game does with them.
	conn, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	bind, err := relaywire.NewBind(0, blob, &key)
	if err != nil {
		panic(err)
	}
	b, err := bind.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	conn.Write(b)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1500)
	n, err := conn.Read(buf)
	if err != nil {
		panic(err)
	}
	t, err := relaywire.Peek(buf[:n])
	if err != nil {
		panic(err)
	}
	fmt.Println(t)
	// Output: BIND_RECEIVED
}
