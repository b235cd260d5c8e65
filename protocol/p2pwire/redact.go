package p2pwire

import (
	"fmt"
	"log/slog"
)

// HELLO and WELCOME carry credentials: the hub ticket, the resume token and
// the UDP secret. Their String and LogValue methods print only sizes and
// ids, so that a message logged by mistake leaks nothing.

// String implements fmt.Stringer without the credentials.
func (m *Hello) String() string {
	return fmt.Sprintf("HELLO{ticket: %d bytes, resume_token: %d bytes}", len(m.Ticket), len(m.ResumeToken))
}

// LogValue implements slog.LogValuer without the credentials.
func (m *Hello) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("ticket_bytes", len(m.Ticket)), slog.Int("resume_token_bytes", len(m.ResumeToken)))
}

// String implements fmt.Stringer without the credentials.
func (m *Welcome) String() string {
	return fmt.Sprintf("WELCOME{peer_id: %s, network: %q, resumed: %v, max_frame_size: %d, resume_window_ms: %d, resume_token: %d bytes, udp: %v}",
		m.PeerID, m.Network, m.Resumed, m.MaxFrameSize, m.ResumeWindowMS, len(m.ResumeToken), m.UDP)
}

// LogValue implements slog.LogValuer without the credentials.
func (m *Welcome) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("peer_id", string(m.PeerID)), slog.String("network", m.Network),
		slog.Bool("resumed", m.Resumed), slog.Any("max_frame_size", m.MaxFrameSize)}
	if m.UDP != nil {
		attrs = append(attrs, slog.Any("udp_key_id", m.UDP.KeyID))
	}
	return slog.GroupValue(attrs...)
}

// String implements fmt.Stringer without the secret.
func (u *UDPSession) String() string {
	if u == nil {
		return "none"
	}
	return fmt.Sprintf("key %d, secret redacted", u.KeyID)
}

// LogValue implements slog.LogValuer without the secret.
func (u *UDPSession) LogValue() slog.Value { return slog.AnyValue(u.KeyID) }
