package relaywire_test

import (
	"errors"
	"fmt"

	"github.com/switchboardgg/switchboard/protocol/relaywire"
)

// A client binds its allocation: the BIND carries the allocation's
// connection data and is signed with its key, both from the REST API.
func ExampleNewBind() {
	key := relaywire.Key{} // base64-decoded "key" of the allocation
	blob := []byte("connection data from the REST API")
	m, err := relaywire.NewBind(0, blob, &key)
	if err != nil {
		panic(err)
	}
	b, err := m.AppendTo(nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d bytes, header % x, length byte %d\n", len(b), b[:4], b[7])

	// The relay decodes it and, having found the key from the blob, checks it.
	var got relaywire.Bind
	if err := got.Unmarshal(b); err != nil {
		panic(err)
	}
	fmt.Println("verified:", got.Verify(&key))
	// Output:
	// 295 bytes, header da 72 00 00, length byte 255
	// verified: true
}

// A relay dispatches on the header and decodes RELAY into one reused value:
// no allocation per datagram.
func ExamplePeek() {
	host, _ := relaywire.ParseAllocationID("f26ed6cc-6ba7-11eb-b7e1-4f0436c8d458")
	peer, _ := relaywire.ParseAllocationID("01234567-89ab-cdef-0011-223344556677")
	datagram, _ := (&relaywire.Relay{From: peer, To: host, Data: []byte("hello")}).AppendTo(nil)

	var relay relaywire.Relay
	for _, d := range [][]byte{datagram, datagram[:20], {0xDA, 0x72, 0x00, 0x07}} {
		t, err := relaywire.Peek(d)
		switch {
		case errors.Is(err, relaywire.ErrUnknownType):
			fmt.Println("drop: unknown type", t)
			continue
		case err != nil:
			fmt.Println("drop:", err)
			continue
		}
		if t != relaywire.TypeRelay {
			continue
		}
		if err := relay.Unmarshal(d); err != nil {
			fmt.Println("drop:", err)
			continue
		}
		fmt.Printf("forward %q from %v to %v\n", relay.Data, relay.From, relay.To)
	}
	// Output:
	// forward "hello" from 01234567-89ab-cdef-0011-223344556677 to f26ed6cc-6ba7-11eb-b7e1-4f0436c8d458
	// drop: relaywire: RELAY: to_allocation_id: truncated
	// drop: unknown type TYPE_7
}

// An SDK turns a relay's ERROR into a Go error and tells fatal codes apart.
func ExampleError() {
	var m relaywire.Error
	if err := m.Unmarshal([]byte{0xDA, 0x72, 0x00, 0x0C, 20: 4}); err != nil {
		panic(err)
	}
	var err error = &m
	fmt.Println(err)
	fmt.Println("new allocation needed:", m.Code.Fatal())
	// Output:
	// relaywire: relay error 4 allocation_id_not_found
	// new allocation needed: true
}
