package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/rooms"
)

// Defaults of RoomsConfig.
const (
	DefaultJoinConcurrency = 64
	DefaultJoinTimeout     = 5 * time.Minute
)

// benchGCPercent is the load generator's GOGC over the measured window.
const benchGCPercent = 400

// RoomsConfig configures RunRooms.
type RoomsConfig struct {
	API        string // API base URL; required
	ServerKey  string // required
	MetricsURL string // the server's /metrics; empty skips server CPU and tick lateness

	Rooms    int           // rooms to create; required
	Players  int           // players per room, 1–16; required
	Tick     int           // tick rate, 1–60; required
	Duration time.Duration // measured time after every player joined; required

	// JoinConcurrency bounds the players joining at once. Zero means
	// DefaultJoinConcurrency.
	JoinConcurrency int
	// JoinTimeout bounds the ramp-up. Zero means DefaultJoinTimeout.
	JoinTimeout time.Duration
	// Client configures every bot's SDK client; nil means its defaults.
	// Its Transport and UDPSocket are set from Transport below.
	Client *rooms.Config
	// Transport is the bots' channel: rooms.TransportWS, or
	// rooms.TransportUDP (UDP only, no fallback, on sockets shared by
	// BotsPerUDPSocket bots). Empty means rooms.TransportWS.
	Transport string
	// Loss and Jitter impair the UDP channel (both directions) through an
	// impairment proxy in front of the node: the probability a datagram is
	// dropped, and a uniform extra delay in [0, Jitter). UDP only.
	Loss   float64
	Jitter time.Duration
	// Out receives a progress line every second and the report. Nil
	// discards them.
	Out io.Writer
	// CPUProfile, when set, receives a CPU profile of this process
	// (runtime/pprof) over the measured window: where the load
	// generator's own time goes.
	CPUProfile io.Writer
}

// RoomsResult is the outcome of a measured run.
type RoomsResult struct {
	Transport string // rooms.TransportWS or rooms.TransportUDP
	JoinedUDP int64  // players whose first connection was over UDP
	// ImpairedLost and ImpairedForwarded count the datagrams the
	// impairment proxy of Loss and Jitter dropped and passed, both ways,
	// over the whole run; zero without it.
	ImpairedLost, ImpairedForwarded uint64
	PlayersWanted                   int
	PlayersConnected                int64 // at the end of the measured window
	JoinFailures                    int64
	Failed                          int64         // players that failed to join or play
	Failures                        []ReasonCount // why, the most frequent first
	Disconnects                     int64         // during the measured window
	OrderErrors                     int64
	Window                          time.Duration
	FramesPerSecond                 float64 // frames delivered to all players
	InputsPerSecond                 float64
	LatencyP50                      time.Duration // input → the frame carrying it
	LatencyP99                      time.Duration
	// LatencyP90, P95 and P98 are the tail below p99; LateShare is the
	// fraction of inputs more than half a tick later than p50: under
	// loss, the inputs that waited for a repair.
	LatencyP90, LatencyP95, LatencyP98 time.Duration
	LateShare                          float64
	// SupersededShare is the fraction of the bots' inputs that never came
	// back in a frame: a later input of the same player took their tick.
	SupersededShare  float64
	TickLatenessP50  time.Duration // from the server's metrics; 0 without them; -1 beyond the top bucket
	TickLatenessP99  time.Duration
	ServerCPUSeconds float64 // CPU the server used during the window; 0 without metrics
	ServerCores      float64 // ServerCPUSeconds / Window
	BenchCores       float64 // CPU this process used during the window
	// BenchMicrosPerFrame is this process's CPU µs per frame delivered:
	// the load generator's cost per player per tick, beside the server's
	// MicrosPerFrame, to show it is not the limit.
	BenchMicrosPerFrame float64
	MicrosPerFrame      float64 // server CPU µs per frame delivered to a player
	PlayersPerCore      float64 // players connected / ServerCores
}

// RunRooms creates cfg.Rooms rooms, fills them with bots, measures for
// cfg.Duration once all have joined, then stops the bots and closes the
// rooms. When players failed or frames arrived out of order it returns the
// result with an error wrapping [ErrPlayersFailed].
func RunRooms(ctx context.Context, cfg RoomsConfig) (*RoomsResult, error) {
	if cfg.Rooms < 1 || cfg.Players < 1 || cfg.Players > 16 || cfg.Tick < 1 || cfg.Tick > 60 || cfg.Duration <= 0 {
		return nil, errors.New("bench: rooms ≥ 1, players 1–16, tick 1–60 and a positive duration are required")
	}
	switch cfg.Transport {
	case "":
		cfg.Transport = rooms.TransportWS
	case rooms.TransportWS, rooms.TransportUDP:
	default:
		return nil, fmt.Errorf("bench: transport %q: want udp or ws", cfg.Transport)
	}
	if cfg.Transport == rooms.TransportWS && (cfg.Loss != 0 || cfg.Jitter != 0) {
		return nil, errors.New("bench: --loss and --jitter impair the UDP channel only (a TCP stream cannot lose a datagram)")
	}
	if cfg.JoinConcurrency <= 0 {
		cfg.JoinConcurrency = DefaultJoinConcurrency
	}
	if cfg.JoinTimeout <= 0 {
		cfg.JoinTimeout = DefaultJoinTimeout
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	httpc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: cfg.JoinConcurrency * 2, MaxIdleConnsPerHost: cfg.JoinConcurrency * 2,
	}}
	defer httpc.CloseIdleConnections()
	be, err := backend.New(cfg.API, cfg.ServerKey, httpc)
	if err != nil {
		return nil, err
	}
	clientCfg := rooms.Config{}
	if cfg.Client != nil {
		clientCfg = *cfg.Client
	}
	if clientCfg.HTTPClient == nil {
		clientCfg.HTTPClient = httpc
	}
	clientCfg.Transport = cfg.Transport
	total := cfg.Rooms * cfg.Players
	var path *UDPPath
	if cfg.Transport == rooms.TransportUDP {
		if path, err = NewUDPPath(total, cfg.Loss, cfg.Jitter, clientCfg.Logger); err != nil {
			return nil, err
		}
		defer path.Close()
	}

	run := NewRunID()
	ids := make([]string, cfg.Rooms)
	fmt.Fprintf(out, "creating %d rooms (%d players, %d Hz) over %s", cfg.Rooms, cfg.Players, cfg.Tick, cfg.Transport)
	if cfg.Loss > 0 || cfg.Jitter > 0 {
		fmt.Fprintf(out, " with %.1f %% loss and %v jitter each way", cfg.Loss*100, cfg.Jitter)
	}
	fmt.Fprintln(out)
	for i := range ids {
		room, err := be.CreateRoom(ctx, backend.CreateRoomRequest{
			RoomID:   fmt.Sprintf("bench-%s-%d", run, i),
			SyncMode: "frame", TickRate: new(cfg.Tick), MaxPlayers: new(cfg.Players), StartMode: "all_ready",
			MaxDurationSeconds: new(int((cfg.JoinTimeout + cfg.Duration + time.Minute) / time.Second)),
		})
		if err != nil {
			return nil, fmt.Errorf("bench: create room %d: %w", i, err)
		}
		ids[i] = room.RoomID
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, id := range ids {
			_ = be.CloseRoom(cctx, id, "bench_done", nil)
		}
	}()

	var cnt Counters
	var lat Histogram
	botCtx, stopBots := context.WithCancel(ctx)
	defer stopBots()
	sem := make(chan struct{}, cfg.JoinConcurrency)
	var joinWG, botWG sync.WaitGroup
	for i := 0; i < total; i++ {
		joinWG.Add(1)
		botWG.Add(1)
		bc := &clientCfg
		if path != nil {
			c := clientCfg
			c.UDPSocket = path.Socket(i)
			bc = &c
		}
		b := &Bot{
			API: cfg.API, Backend: be, RoomID: ids[i/cfg.Players],
			Username: fmt.Sprintf("bot-%s-%d", run, i), Seat: i % cfg.Players,
			Client: bc, Latency: &lat, Counters: &cnt,
		}
		var once sync.Once
		b.Joined = func(error) { once.Do(func() { <-sem; joinWG.Done() }) }
		sem <- struct{}{}
		go func() {
			defer botWG.Done()
			_ = b.Run(botCtx)
			b.Joined(nil) // in case Run returned before joining
		}()
	}

	progress := func(phase string, since time.Time, lastFrames *int64) {
		f := cnt.Frames.Load()
		fmt.Fprintf(out, "%-7s %5.0fs connected %6d/%d  frames/s %8d  disconnects %d  failed %d  input→frame p99 %v\n",
			phase, time.Since(since).Seconds(), cnt.Connected.Load(), total, f-*lastFrames,
			cnt.Disconnects.Load(), cnt.Failed.Load(), lat.Quantile(0.99))
		*lastFrames = f
	}
	joined := make(chan struct{})
	go func() { joinWG.Wait(); close(joined) }()
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastFrames int64
ramp:
	for {
		select {
		case <-joined:
			break ramp
		case <-tick.C:
			progress("ramp", start, &lastFrames)
		case <-time.After(time.Until(start.Add(cfg.JoinTimeout))):
			stopBots()
			botWG.Wait()
			writeFailures(out, &cnt.Failures)
			return nil, fmt.Errorf("bench: only %d of %d players joined within %v", cnt.Joined.Load(), total, cfg.JoinTimeout)
		case <-ctx.Done():
			stopBots()
			botWG.Wait()
			return nil, ctx.Err()
		}
	}
	if cnt.Joined.Load() == 0 {
		stopBots()
		botWG.Wait()
		writeFailures(out, &cnt.Failures)
		return nil, fmt.Errorf("bench: none of %d players joined: %w", total, ErrPlayersFailed)
	}
	fmt.Fprintf(out, "%d of %d players joined in %.1fs; measuring for %v\n", cnt.Joined.Load(), total, time.Since(start).Seconds(), cfg.Duration)

	// A short settle, then the measured window. The load generator's own
	// garbage collection must not land in it: 1,000 SDK connections keep
	// ~200 MB live, and one collection of that on the bench's one P held
	// every bot for several ticks (p99 38 → 63 ms at 1,000 players, the
	// node untouched). So collect now, and let the heap grow to five
	// times the live size before the next one (about a minute at 1,000
	// players); the node's GC is its own and stays as it is.
	time.Sleep(time.Second)
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(benchGCPercent))
	lat.Reset()
	var before, after serverMetrics
	if cfg.MetricsURL != "" {
		if before, err = scrape(ctx, cfg.MetricsURL); err != nil {
			return nil, err
		}
	}
	benchBefore := processCPU()
	if cfg.CPUProfile != nil {
		if err := pprof.StartCPUProfile(cfg.CPUProfile); err != nil {
			return nil, fmt.Errorf("bench: cpu profile: %w", err)
		}
	}
	f0, i0, d0 := cnt.Frames.Load(), cnt.Inputs.Load(), cnt.Disconnects.Load()
	in0, sup0 := cnt.InFrame.Load(), cnt.Superseded.Load()
	w0 := time.Now()
	lastFrames = f0
	deadline := time.After(cfg.Duration)
measure:
	for {
		select {
		case <-deadline:
			break measure
		case <-tick.C:
			progress("measure", w0, &lastFrames)
		case <-ctx.Done():
			break measure
		}
	}
	window := time.Since(w0)
	if cfg.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	res := &RoomsResult{
		Transport:        cfg.Transport,
		JoinedUDP:        cnt.JoinedUDP.Load(),
		PlayersWanted:    total,
		PlayersConnected: cnt.Connected.Load(),
		JoinFailures:     int64(total) - cnt.Joined.Load(),
		Disconnects:      cnt.Disconnects.Load() - d0,
		OrderErrors:      cnt.OrderErrors.Load(),
		Window:           window,
		FramesPerSecond:  float64(cnt.Frames.Load()-f0) / window.Seconds(),
		InputsPerSecond:  float64(cnt.Inputs.Load()-i0) / window.Seconds(),
		LatencyP50:       lat.Quantile(0.5),
		LatencyP99:       lat.Quantile(0.99),
		SupersededShare:  share(cnt.Superseded.Load()-sup0, cnt.InFrame.Load()-in0),
		LatencyP90:       lat.Quantile(0.90),
		LatencyP95:       lat.Quantile(0.95),
		LatencyP98:       lat.Quantile(0.98),
		LateShare:        lat.FractionAbove(lat.Quantile(0.5) + time.Second/time.Duration(2*cfg.Tick)),
		BenchCores:       (processCPU() - benchBefore).Seconds() / window.Seconds(),
	}
	if res.FramesPerSecond > 0 {
		res.BenchMicrosPerFrame = res.BenchCores * 1e6 / res.FramesPerSecond
	}
	if cfg.MetricsURL != "" {
		if after, err = scrape(ctx, cfg.MetricsURL); err != nil {
			return nil, err
		}
		res.ServerCPUSeconds = after.CPUSeconds - before.CPUSeconds
		res.ServerCores = res.ServerCPUSeconds / window.Seconds()
		late := after.Lateness.sub(before.Lateness)
		res.TickLatenessP50 = bucketDuration(late.quantile(0.5))
		res.TickLatenessP99 = bucketDuration(late.quantile(0.99))
		if res.FramesPerSecond > 0 {
			res.MicrosPerFrame = res.ServerCPUSeconds * 1e6 / (res.FramesPerSecond * window.Seconds())
		}
		if res.ServerCores > 0 {
			res.PlayersPerCore = float64(res.PlayersConnected) / res.ServerCores
		}
	}
	stopBots()
	botWG.Wait()
	res.Failed = cnt.Failed.Load()
	res.Failures = cnt.Failures.Counts()
	if path != nil {
		if err := path.Err(); err != nil {
			return nil, err
		}
		if st, ok := path.Stats(); ok {
			res.ImpairedLost = st.Up.Lost + st.Down.Lost
			res.ImpairedForwarded = st.Up.Forwarded + st.Down.Forwarded
		}
	}
	res.Report(out)
	if res.Failed > 0 || res.OrderErrors > 0 {
		return res, fmt.Errorf("bench: %d of %d players failed, %d frames out of order: %w", res.Failed, total, res.OrderErrors, ErrPlayersFailed)
	}
	return res, nil
}

// share returns part ÷ (part + rest), 0 when both are 0.
func share(part, rest int64) float64 {
	if part+rest <= 0 {
		return 0
	}
	return float64(part) / float64(part+rest)
}

// writeFailures writes the failures counted so far by reason.
func writeFailures(w io.Writer, f *Failures) {
	if c := f.Counts(); len(c) > 0 {
		fmt.Fprintf(w, "players failed, by reason:\n")
		WriteCounts(w, c)
	}
}

// Report writes the result for people.
func (r *RoomsResult) Report(w io.Writer) {
	fmt.Fprintf(w, "\ntransport             %s (%d players joined over udp)\n", r.Transport, r.JoinedUDP)
	if r.ImpairedLost+r.ImpairedForwarded > 0 {
		fmt.Fprintf(w, "impairment proxy      %d datagrams dropped, %d forwarded (%.1f %%)\n", r.ImpairedLost, r.ImpairedForwarded,
			100*float64(r.ImpairedLost)/float64(r.ImpairedLost+r.ImpairedForwarded))
	}
	fmt.Fprintf(w, "players connected     %d of %d (join failures %d, failed %d, disconnects %d, order errors %d)\n",
		r.PlayersConnected, r.PlayersWanted, r.JoinFailures, r.Failed, r.Disconnects, r.OrderErrors)
	if len(r.Failures) > 0 {
		fmt.Fprintln(w, "players failed, by reason:")
		WriteCounts(w, r.Failures)
	}
	fmt.Fprintf(w, "frames/s delivered    %.0f (inputs/s %.0f) over %.1fs\n", r.FramesPerSecond, r.InputsPerSecond, r.Window.Seconds())
	fmt.Fprintf(w, "input→frame latency   p50 %v  p99 %v\n", r.LatencyP50, r.LatencyP99)
	fmt.Fprintf(w, "input→frame tail      p90 %v  p95 %v  p98 %v; %.2f %% of inputs over p50 + half a tick\n",
		r.LatencyP90, r.LatencyP95, r.LatencyP98, 100*r.LateShare)
	fmt.Fprintf(w, "inputs superseded     %.2f %% (never in a frame: a later input of the same player took the tick)\n", 100*r.SupersededShare)
	if r.ServerCPUSeconds > 0 {
		fmt.Fprintf(w, "tick lateness         p50 %s  p99 %s (server histogram buckets)\n", bucketString(r.TickLatenessP50), bucketString(r.TickLatenessP99))
		fmt.Fprintf(w, "server CPU            %.2f cores; %.2f µs per frame delivered; %.0f players per core\n",
			r.ServerCores, r.MicrosPerFrame, r.PlayersPerCore)
	} else {
		fmt.Fprintln(w, "server CPU            unknown (no --metrics URL)")
	}
	fmt.Fprintf(w, "load generator CPU    %.2f cores; %.2f µs per frame delivered (GOMAXPROCS %d)\n", r.BenchCores, r.BenchMicrosPerFrame, runtime.GOMAXPROCS(0))
}

// bucketDuration converts a histogram bucket's upper bound in seconds; the
// +Inf bucket becomes -1.
func bucketDuration(sec float64) time.Duration {
	if math.IsInf(sec, 1) {
		return -1
	}
	return time.Duration(sec * float64(time.Second))
}

// bucketString prints a quantile read from histogram buckets.
func bucketString(d time.Duration) string {
	if d < 0 {
		return "beyond the top bucket"
	}
	return "≤ " + d.String()
}
