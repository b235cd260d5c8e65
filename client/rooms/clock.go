package rooms

import (
	"sync"
	"time"
)

// rttSamples is how many PONG round trips the RTT median covers (seed: "建议取
// 最近 10 次的中位数").
const rttSamples = 10

// maxRTT discards nonsense samples (a PONG echoing a time from the future or
// the far past).
const maxRTT = 60 * time.Second

// clock estimates the round-trip time and the node's clock from PONGs.
type clock struct {
	mu       sync.Mutex // guards the fields below
	samples  [rttSamples]time.Duration
	n        int // samples held, ≤ rttSamples
	next     int // ring position of the next sample
	median   time.Duration
	offset   time.Duration // server time − local time
	haveTime bool
}

// welcome takes the WELCOME's server time as a first estimate, before any
// PONG.
func (k *clock) welcome(now time.Time, serverMS uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.haveTime {
		k.offset = time.UnixMilli(int64(serverMS)).Sub(now)
		k.haveTime = true
	}
}

// pong adds the sample of a PONG received at now: RTT = now − client_ms and
// server time ≈ server_ms + RTT/2 (seed "心跳").
func (k *clock) pong(now time.Time, clientMS, serverMS uint64) {
	rtt := now.Sub(time.UnixMilli(int64(clientMS)))
	if rtt < 0 || rtt > maxRTT {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.samples[k.next] = rtt
	k.next = (k.next + 1) % rttSamples
	k.n = min(k.n+1, rttSamples)
	k.median = median(k.samples[:k.n])
	k.offset = time.UnixMilli(int64(serverMS)).Add(rtt / 2).Sub(now)
	k.haveTime = true
}

// rtt returns the median of the recent samples, 0 before the first.
func (k *clock) rtt() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.median
}

// serverTime returns the estimated node time at local time now.
func (k *clock) serverTime(now time.Time) time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return now.Add(k.offset)
}

// median returns the median of s (the mean of the two middle values for an
// even count), without changing s.
func median(s []time.Duration) time.Duration {
	if len(s) == 0 {
		return 0
	}
	var buf [rttSamples]time.Duration
	v := buf[:copy(buf[:], s)]
	for i := 1; i < len(v); i++ { // insertion sort: at most 10 values
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
	m := len(v) / 2
	if len(v)%2 == 1 {
		return v[m]
	}
	return (v[m-1] + v[m]) / 2
}
