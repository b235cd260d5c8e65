package node

import (
	"errors"

	"github.com/switchboardgg/switchboard/protocol/roomwire"
	"github.com/switchboardgg/switchboard/rooms"
)

// A Dispatcher decodes the messages of one seated connection and hands
// them to its room, whatever carries them: the WebSocket connections of
// this package and the sessions of node/udp. It counts messages in and
// invalid ones. It is used by one goroutine at a time and allocates
// nothing per message.
type Dispatcher struct {
	s       *Server
	link    *rooms.Link
	invalid int  // invalid messages in a row
	spoke   bool // a message came: the client holds this connection's WELCOME
	input   roomwire.Input
	custom  roomwire.Custom
	req     roomwire.FrameReq
	snap    roomwire.SnapshotPut
	ping    roomwire.Ping
	pong    roomwire.Pong
	empty   struct {
		ready roomwire.Ready
		start roomwire.Start
		leave roomwire.Leave
	}
}

// Dispatch handles one im.game.v1 message p (type byte first). It returns
// the PONG that answers a PING (the caller sends it and releases it), and
// fatal when this was the third invalid message in a row: the caller then
// closes the connection with ERROR 6. Unknown types are ignored.
func (d *Dispatcher) Dispatch(p []byte) (pong *rooms.Msg, fatal bool) {
	m := d.s.m
	d.spokeOnce()
	t, err := roomwire.Peek(p)
	if errors.Is(err, roomwire.ErrUnknownType) {
		m.in[p[0]].Inc() // ignored; neither valid nor invalid
		return nil, false
	}
	if err == nil {
		m.in[t].Inc()
		l := d.link
		switch t {
		case roomwire.TypeInput:
			if err = d.input.Unmarshal(p); err == nil {
				l.Input(d.input.Data)
			}
		case roomwire.TypeFrameReq:
			if err = d.req.Unmarshal(p); err == nil {
				l.FrameReq(d.req.From, d.req.To)
			}
		case roomwire.TypeCustom:
			if err = d.custom.Unmarshal(p); err == nil {
				l.Custom(d.custom.To, d.custom.Reliable, d.custom.Data)
			}
		case roomwire.TypeReady:
			if err = d.empty.ready.Unmarshal(p); err == nil {
				l.Ready()
			}
		case roomwire.TypeStart:
			err = d.empty.start.Unmarshal(p) // not accepted from clients yet
		case roomwire.TypeSnapshotPut:
			if err = d.snap.Unmarshal(p); err == nil {
				l.SnapshotPut(d.snap.Frame, d.snap.Data)
			}
		case roomwire.TypePing:
			if err = d.ping.Unmarshal(p); err == nil {
				d.pong.ClientMS, d.pong.ServerMS = d.ping.ClientMS, uint64(d.s.cfg.Now().UnixMilli())
				if pm, perr := d.s.engine.Encode(&d.pong); perr == nil {
					pong = pm
				}
			}
		case roomwire.TypeLeave:
			if err = d.empty.leave.Unmarshal(p); err == nil {
				l.Leave()
			}
		default: // a node-to-client type, or HELLO/RESUME after the handshake
			err = errWrongDirection
		}
	}
	if err == nil {
		d.invalid = 0
		return pong, false
	}
	m.invalidMsgs.Inc()
	d.invalid++
	return pong, d.invalid >= invalidLimit
}

// Invalid counts one invalid message that never reached Dispatch, because
// the transport's framing around it was malformed (node/udp: an INPUTS
// body that does not check, a FRAME from a client), exactly as Dispatch
// counts an undecodable one; it reports fatal as Dispatch does.
func (d *Dispatcher) Invalid() (fatal bool) {
	d.spokeOnce()
	d.s.m.invalidMsgs.Inc()
	d.invalid++
	return d.invalid >= invalidLimit
}

// spokeOnce confirms, at the connection's first message, that its client
// holds this connection's WELCOME.
func (d *Dispatcher) spokeOnce() {
	if !d.spoke {
		d.spoke = true
		d.s.resumes.confirm(d.link)
	}
}
