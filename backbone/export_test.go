package backbone

import (
	"encoding/json"

	"github.com/nats-io/nats.go"
)

type natsConn = nats.Conn

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
