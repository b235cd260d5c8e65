package sealed_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/switchboardgg/switchboard/internal/sealed"
)

// Both sides derive the same keys from the session secret and the two
// handshake nonces; the client seals with I2R, the server opens with it.
func Example() {
	secret := bytes.Repeat([]byte{0x42}, sealed.KeySize) // from the connect response
	clientNonce := bytes.Repeat([]byte{1}, sealed.NonceSize)
	serverNonce := bytes.Repeat([]byte{2}, sealed.NonceSize)

	client, _ := sealed.DeriveKeys(secret, clientNonce, serverNonce, "session")
	server, _ := sealed.DeriveKeys(secret, clientNonce, serverNonce, "session")

	sealer, _ := sealed.NewSealer(client.I2R[:], 7)
	opener, _ := sealed.NewOpener(server.I2R[:], 7)

	datagram, _ := sealer.Seal(nil, []byte("INPUT"))
	payload, seq, err := opener.Open(nil, datagram)
	fmt.Println(string(payload), seq, err, len(datagram)-len(payload))

	_, _, err = opener.Open(nil, datagram) // an attacker replays it
	fmt.Println(errors.Is(err, sealed.ErrReplay))
	// Output:
	// INPUT 0 <nil> 29
	// true
}
