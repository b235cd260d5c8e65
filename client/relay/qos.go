package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"time"
)

// The QoS probe of Unity's QoS protocol, which a relay node answers on its
// UDP port (docs/protocol/relay.md §15):
//
//	request:  59 | 00 | titleLen | title (titleLen-1) | seq | id (2) | timestamp (8)
//	response: 95 | 00 | seq | id (2) | timestamp (8)          13 bytes
//
// id is the index of the endpoint probed and seq the probe's number, so
// an answer names what it answers; timestamp is ours, echoed.
const (
	qosTitle        = "QoS request"
	qosRequestSize  = 14 + len(qosTitle)
	qosResponseSize = 13
	// maxQoSEndpoints bounds the endpoints probed at once.
	maxQoSEndpoints = 256
)

// RegionRTT is a region and the round-trip time measured to it: the
// fastest answer of any of its QoS endpoints.
type RegionRTT struct {
	Region string
	// RTT is the round-trip time; zero when no endpoint answered.
	RTT time.Duration
	// Endpoints is the number of QoS endpoints probed; Answered of them
	// answered at least once.
	Endpoints, Answered int
}

// Reachable reports whether an endpoint of the region answered.
func (r RegionRTT) Reachable() bool { return r.Answered > 0 }

// MeasureRegions probes the QoS endpoints of every relay region
// ([Client.QoSServers]) and returns the regions sorted by RTT, fastest
// first, unreachable ones last. It sends Config.QoSProbes probes to each
// endpoint and waits at most Config.QoSTimeout. It fails with
// ErrNoQoSServer when the API lists no server.
func (c *Client) MeasureRegions(ctx context.Context) ([]RegionRTT, error) {
	servers, err := c.QoSServers(ctx)
	if err != nil {
		return nil, err
	}
	type target struct {
		region string
		addr   netip.AddrPort
	}
	var targets []target
	byRegion := map[string]*RegionRTT{}
	var order []string
	for _, s := range servers {
		if byRegion[s.Region] == nil {
			byRegion[s.Region] = &RegionRTT{Region: s.Region}
			order = append(order, s.Region)
		}
		for _, e := range s.Endpoints {
			ap, err := netip.ParseAddrPort(e)
			if err != nil || len(targets) >= maxQoSEndpoints {
				continue
			}
			targets = append(targets, target{s.Region, ap})
			byRegion[s.Region].Endpoints++
		}
	}
	if len(targets) == 0 {
		return nil, ErrNoQoSServer
	}
	pc, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, fmt.Errorf("relay: qos: %w", err)
	}
	defer pc.Close()
	deadline := time.Now().Add(c.cfg.QoSTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = pc.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = pc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	best := make([]time.Duration, len(targets))
	start := time.Now()
	var req [qosRequestSize]byte
	req[0], req[1], req[2] = 0x59, 0, byte(len(qosTitle)+1)
	copy(req[3:], qosTitle)
	spacing := c.cfg.QoSTimeout / time.Duration(4*c.cfg.QoSProbes)
	probes := c.cfg.QoSProbes
	sent := 0
	next := time.Now()
	buf := make([]byte, 64)
	for {
		// Send the next round of probes when due: one per endpoint.
		if sent < probes && !time.Now().Before(next) {
			for i, t := range targets {
				tail := req[len(req)-11:]
				tail[0] = byte(sent)
				binary.LittleEndian.PutUint16(tail[1:], uint16(i))
				binary.LittleEndian.PutUint64(tail[3:], uint64(time.Since(start)))
				_, _ = pc.WriteToUDPAddrPort(req[:], t.addr)
			}
			sent++
			next = time.Now().Add(spacing)
		}
		if sent < probes {
			_ = pc.SetReadDeadline(minTime(next, deadline))
		} else {
			_ = pc.SetReadDeadline(deadline)
		}
		n, from, err := pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if !time.Now().Before(deadline) {
					break
				}
				continue
			}
			if isRefused(err) {
				continue
			}
			return nil, fmt.Errorf("relay: qos: %w", err)
		}
		if n != qosResponseSize || buf[0] != 0x95 {
			continue
		}
		i := int(binary.LittleEndian.Uint16(buf[3:]))
		if i >= len(targets) || targets[i].addr.Port() != from.Port() || targets[i].addr.Addr().Unmap() != from.Addr().Unmap() {
			continue
		}
		rtt := time.Since(start) - time.Duration(binary.LittleEndian.Uint64(buf[5:]))
		if rtt <= 0 {
			rtt = time.Nanosecond
		}
		if best[i] == 0 || rtt < best[i] {
			best[i] = rtt
		}
		if sent == probes && allAnswered(best) {
			break
		}
	}
	answered := map[int]bool{}
	for i, t := range targets {
		r := byRegion[t.region]
		if best[i] == 0 {
			continue
		}
		if !answered[i] {
			answered[i] = true
			r.Answered++
		}
		if r.RTT == 0 || best[i] < r.RTT {
			r.RTT = best[i]
		}
	}
	out := make([]RegionRTT, 0, len(order))
	for _, name := range order {
		out = append(out, *byRegion[name])
	}
	rankRegions(out)
	return out, nil
}

// rankRegions sorts regions by RTT, fastest first, unreachable ones last
// in their original order.
func rankRegions(out []RegionRTT) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Reachable() != b.Reachable() {
			return a.Reachable()
		}
		return a.Reachable() && a.RTT < b.RTT
	})
}

func allAnswered(best []time.Duration) bool {
	for _, b := range best {
		if b == 0 {
			return false
		}
	}
	return true
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
