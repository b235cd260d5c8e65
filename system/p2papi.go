package system

import (
	"fmt"

	"github.com/switchboardgg/switchboard/tokens"
)

// HubTicketKeyID is the key id of the hub tickets sealed with the
// deployment's signing key: the P2P API seals with it and hubs open with
// it (tokens.HubKeyring). A rotation adds a key of another id.
const HubTicketKeyID = 1

// hubKeyring returns the keyring of hub tickets made from the signing
// key.
func hubKeyring(signingKey []byte) (*tokens.HubKeyring, error) {
	r, err := tokens.NewHubKeyring(tokens.HubKey{ID: HubTicketKeyID, Secret: signingKey})
	if err != nil {
		return nil, fmt.Errorf("system: hub ticket key: %w", err)
	}
	return r, nil
}
