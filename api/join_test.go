package api_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/api"
)

// The connect ticket and the session key never reach a log or an error
// message that prints a Connect, in any form.
func TestConnectKeepsSecretsOut(t *testing.T) {
	c := api.Connect{NodeID: "n1", WSURL: "ws://n1", ConnectTicket: "ct1.secret-ticket", UDP: "127.0.0.1:7701",
		SessionKey: "c2Vzc2lvbi1rZXktc2Vzc2lvbi1rZXktc2Vzc2lvbi0=", KeyID: "AAECAwQFBgcICQoLDA0ODw", Transport: "udp"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("joined", "connect", c)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("joined", "connect", c, "resp", api.JoinResponse{Connect: c})
	fmt.Fprintf(&buf, "%v %+v %s %+v\n", c, c, c, api.JoinResponse{Connect: c})
	for _, secret := range []string{c.ConnectTicket, c.SessionKey} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("%q printed:\n%s", secret, buf.String())
		}
	}
}
