package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

// Defaults and limits of ControlConfig.
const (
	DefaultControlConcurrency = 64
	DefaultControlDuration    = 20 * time.Second
	DefaultControlRoomSize    = 16
	// MaxControlConcurrency bounds the flows in flight.
	MaxControlConcurrency = 4096
	// MaxControlRooms bounds the rooms one run creates: a node runs at
	// most rooms.DefaultMaxRooms (10,000) by default.
	MaxControlRooms = 9000
)

// ControlConfig configures RunControl.
type ControlConfig struct {
	API       string // API base URL; required
	ServerKey string // required
	// MetricsURL is the server's /metrics, read for process_cpu_seconds_total
	// when ServerPID is 0. Both empty: no server CPU figure.
	MetricsURL string
	// ServerPID is the server's process id on this machine; its CPU is read
	// from /proc/<pid>/stat. Zero means MetricsURL.
	ServerPID int

	// Duration is the measured time. Zero means DefaultControlDuration.
	Duration time.Duration
	// Concurrency is the number of flows in flight. Zero means
	// DefaultControlConcurrency; at most MaxControlConcurrency.
	Concurrency int
	// RoomSize is max_players of the rooms joined, 1–16. Zero means
	// DefaultControlRoomSize.
	RoomSize int
	// Out receives a progress line every second and the report. Nil
	// discards them.
	Out io.Writer
}

// ControlResult is the outcome of RunControl.
type ControlResult struct {
	Flows            int64 // completed in the window
	Failures         int64
	FailureReasons   map[string]int64 // by "step: status code reason"
	Window           time.Duration
	FlowsPerSecond   float64
	LatencyP50       time.Duration // of a whole flow
	LatencyP99       time.Duration
	ServerCPUSeconds float64 // 0 without a pid or metrics
	ServerCores      float64
	ServerMicrosFlow float64 // server CPU µs per flow
	BenchCores       float64
}

// RunControl measures the control plane alone: each flow mints an auth
// token (POST /server/v1/auth-tokens), logs in with it (C0) and joins an
// open room of cfg.RoomSize seats (C1), nobody connects to the node. The
// rooms are created ahead by a goroutine of their own and closed at the
// end. The server must let one address log in at this rate (dev with
// --login-rate -1).
func RunControl(ctx context.Context, cfg ControlConfig) (*ControlResult, error) {
	if cfg.API == "" || cfg.ServerKey == "" {
		return nil, errors.New("bench: the API address and the server key are required")
	}
	if cfg.Duration <= 0 {
		cfg.Duration = DefaultControlDuration
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultControlConcurrency
	}
	if cfg.RoomSize <= 0 {
		cfg.RoomSize = DefaultControlRoomSize
	}
	if cfg.Concurrency > MaxControlConcurrency || cfg.RoomSize > 16 {
		return nil, fmt.Errorf("bench: concurrency is at most %d and the room size 1–16", MaxControlConcurrency)
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	c := &controlRun{
		cfg: cfg,
		api: strings.TrimRight(cfg.API, "/"),
		httpc: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			MaxIdleConns: cfg.Concurrency * 2, MaxIdleConnsPerHost: cfg.Concurrency * 2,
		}},
		run:     strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
		reasons: make(map[string]int64),
	}
	defer c.httpc.CloseIdleConnections()

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	seats := make(chan string, cfg.Concurrency*2) // room ids, one per free seat
	var wg sync.WaitGroup
	var roomErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(seats)
		roomErr = c.createRooms(runCtx, seats)
	}()

	var lat Histogram
	var measuring atomic.Bool
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for room := range seats {
				t0 := time.Now()
				err := c.flow(runCtx, room)
				if runCtx.Err() != nil {
					return
				}
				if !measuring.Load() {
					continue
				}
				if err != nil {
					c.fail(err)
					continue
				}
				lat.Record(time.Since(t0))
				c.flows.Add(1)
			}
		}()
	}

	// One second of warm-up, then the measured window.
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		stop()
		wg.Wait()
		return nil, ctx.Err()
	}
	cpu0, cpuErr := c.serverCPU(ctx)
	bench0 := processCPU()
	measuring.Store(true)
	w0 := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	deadline := time.After(cfg.Duration)
	var last, lastFail int64
measure:
	for {
		select {
		case <-deadline:
			break measure
		case <-tick.C:
			n, f := c.flows.Load(), c.failures.Load()
			fmt.Fprintf(out, "measure %5.0fs flows/s %6d  failed %d  flow p50 %v p99 %v\n",
				time.Since(w0).Seconds(), n-last, f-lastFail, lat.Quantile(0.5), lat.Quantile(0.99))
			last, lastFail = n, f
		case <-ctx.Done():
			stop()
			wg.Wait()
			return nil, ctx.Err()
		}
	}
	measuring.Store(false)
	window := time.Since(w0)
	res := &ControlResult{
		Flows:      c.flows.Load(),
		Failures:   c.failures.Load(),
		Window:     window,
		LatencyP50: lat.Quantile(0.5),
		LatencyP99: lat.Quantile(0.99),
		BenchCores: (processCPU() - bench0).Seconds() / window.Seconds(),
	}
	cpu1, cpuErr1 := c.serverCPU(ctx)
	stop()
	wg.Wait()
	if roomErr != nil && !errors.Is(roomErr, context.Canceled) {
		return nil, roomErr
	}
	res.FlowsPerSecond = float64(res.Flows) / window.Seconds()
	if cpuErr == nil && cpuErr1 == nil && cpu1 > 0 {
		res.ServerCPUSeconds = cpu1 - cpu0
		res.ServerCores = res.ServerCPUSeconds / window.Seconds()
		if res.Flows > 0 {
			res.ServerMicrosFlow = res.ServerCPUSeconds * 1e6 / float64(res.Flows)
		}
	}
	c.mu.Lock()
	res.FailureReasons = c.reasons
	c.mu.Unlock()
	c.closeRooms(ctx)

	fmt.Fprintf(out, "flows %d in %.1fs: %.0f flows/s, flow p50 %v p99 %v, failed %d\n",
		res.Flows, window.Seconds(), res.FlowsPerSecond, res.LatencyP50, res.LatencyP99, res.Failures)
	for r, n := range res.FailureReasons {
		fmt.Fprintf(out, "  failed %d: %s\n", n, r)
	}
	if res.ServerCPUSeconds > 0 {
		fmt.Fprintf(out, "server CPU %.2f cores, %.0f µs per flow; bench CPU %.2f cores\n", res.ServerCores, res.ServerMicrosFlow, res.BenchCores)
	} else {
		fmt.Fprintf(out, "server CPU unknown (no --server-pid or metrics); bench CPU %.2f cores\n", res.BenchCores)
	}
	if res.Flows == 0 {
		return res, errors.New("bench: no flow completed")
	}
	if res.Failures > 0 {
		return res, fmt.Errorf("bench: %d flows failed", res.Failures)
	}
	return res, nil
}

// controlRun is the state of one RunControl.
type controlRun struct {
	cfg   ControlConfig
	api   string
	httpc *http.Client
	run   string // makes room ids and usernames unique per run

	flows, failures atomic.Int64
	users           atomic.Int64

	mu      sync.Mutex
	reasons map[string]int64 // guarded by mu
	rooms   []string         // guarded by mu; created, closed at the end
}

// createRooms creates rooms and hands out each of their seats until ctx
// ends or MaxControlRooms are created.
func (c *controlRun) createRooms(ctx context.Context, seats chan<- string) error {
	for i := 0; i < MaxControlRooms; i++ {
		id := fmt.Sprintf("bc-%s-%d", c.run, i)
		body := api.CreateRoomRequest{
			RoomID: id, SyncMode: "relay", MaxPlayers: new(c.cfg.RoomSize),
			StartMode: "manual", Access: "open", MaxDurationSeconds: new(600),
		}
		if err := c.call(ctx, "create room", c.cfg.ServerKey, "/server/v1/game/rooms", body, nil); err != nil {
			return err
		}
		c.mu.Lock()
		c.rooms = append(c.rooms, id)
		c.mu.Unlock()
		for range c.cfg.RoomSize {
			select {
			case seats <- id:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return fmt.Errorf("bench: %d rooms created, the most one run may create", MaxControlRooms)
}

// flow is one player: auth token, login, join.
func (c *controlRun) flow(ctx context.Context, room string) error {
	user := fmt.Sprintf("bc-%s-%d", c.run, c.users.Add(1))
	var at api.AuthTokenResponse
	if err := c.call(ctx, "auth token", c.cfg.ServerKey, "/server/v1/auth-tokens", api.AuthTokenRequest{Username: user}, &at); err != nil {
		return err
	}
	var sess api.SessionResponse
	if err := c.call(ctx, "login", "", "/client/v1/sessions", api.LoginRequest{Username: user, AuthToken: at.AuthToken}, &sess); err != nil {
		return err
	}
	return c.call(ctx, "join", sess.AccessToken, "/client/v1/game/rooms/"+room+"/join", api.JoinRequest{ClientSessionID: "bench-" + user}, nil)
}

// stepError is a failed step of a flow.
type stepError struct {
	step   string
	status int
	reason string
	err    error // of the transport, if any
}

func (e *stepError) Unwrap() error { return e.err }

func (e *stepError) Error() string {
	return fmt.Sprintf("bench: %s: %d %s", e.step, e.status, e.reason)
}

// call POSTs body to path with the bearer token and decodes a 2xx answer
// into out (nil: discarded).
func (c *controlRun) call(ctx context.Context, step, bearer, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.httpc.Do(req)
	if err != nil {
		return &stepError{step: step, reason: err.Error(), err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return &stepError{step: step, status: resp.StatusCode, reason: err.Error()}
	}
	if resp.StatusCode/100 != 2 {
		var e api.ErrorBody
		_ = json.Unmarshal(b, &e)
		reason := e.Error.Code
		if e.Error.Details != nil && e.Error.Details.Reason != "" {
			reason += " " + e.Error.Details.Reason
		}
		return &stepError{step: step, status: resp.StatusCode, reason: reason}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return &stepError{step: step, status: resp.StatusCode, reason: "malformed answer"}
		}
	}
	return nil
}

// maxFailureReasons bounds the distinct failure reasons kept.
const maxFailureReasons = 32

func (c *controlRun) fail(err error) {
	c.failures.Add(1)
	key := err.Error()
	var se *stepError
	if errors.As(err, &se) {
		key = fmt.Sprintf("%s: %d %s", se.step, se.status, se.reason)
	}
	c.mu.Lock()
	if _, ok := c.reasons[key]; ok || len(c.reasons) < maxFailureReasons {
		c.reasons[key]++
	}
	c.mu.Unlock()
}

// serverCPU returns the server's CPU seconds so far, from /proc or its
// metrics; 0 without either.
func (c *controlRun) serverCPU(ctx context.Context) (float64, error) {
	if c.cfg.ServerPID > 0 {
		return procCPU(c.cfg.ServerPID)
	}
	if c.cfg.MetricsURL != "" {
		m, err := scrape(ctx, c.cfg.MetricsURL)
		return m.CPUSeconds, err
	}
	return 0, nil
}

// closeRooms closes the rooms of the run, a few at a time.
func (c *controlRun) closeRooms(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	c.mu.Lock()
	ids := c.rooms
	c.mu.Unlock()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, id := range ids {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_ = c.call(ctx, "close room", c.cfg.ServerKey, "/server/v1/game/rooms/"+id+"/close", api.CloseRequest{Reason: "bench_done"}, nil)
		}()
	}
	wg.Wait()
}

// procCPU reads the user+system CPU seconds of process pid from
// /proc/<pid>/stat (Linux; clock ticks of 100 Hz, as on every Linux
// build Go supports).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: server cpu: %w", err)
	}
	// The command name (field 2) may hold spaces; fields after ")".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bench: server cpu: malformed /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("bench: server cpu: malformed /proc stat")
	}
	utime, err1 := strconv.ParseFloat(f[11], 64) // field 14
	stime, err2 := strconv.ParseFloat(f[12], 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, errors.New("bench: server cpu: malformed /proc stat")
	}
	return (utime + stime) / 100, nil
}
