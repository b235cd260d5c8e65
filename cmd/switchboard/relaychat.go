package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/bench"
	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/relay"
	"github.com/switchboardgg/switchboard/client/session"
)

// relayClientFlags are the flags of the relay client verbs (host, join,
// regions).
type relayClientFlags struct {
	af        apiFlags
	username  string
	transport string
}

func (f *relayClientFlags) register(cmd *cobra.Command, transport bool) {
	f.af.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.username, "username", "", "log in as `NAME` (default: relay-<random>)")
	if transport {
		names := make([]string, 0, 4)
		for _, t := range relay.Transports() {
			names = append(names, string(t))
		}
		fl.StringVar(&f.transport, "transport", string(relay.DefaultTransport), "the `CARRIER` to the relay node: "+strings.Join(names, ", "))
	}
}

// client logs in (as the other client verbs: an auth token minted with
// the server key, or none when there is no key and the server allows
// anonymous logins) and returns a relay client.
func (f *relayClientFlags) client(ctx context.Context) (*relay.Client, error) {
	// The SDK's records of ordinary ends ("connection ended", at info)
	// would repeat, in the chat's terminal, what the verbs say for
	// people; warnings still show.
	cfg := &relay.Config{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if f.transport != "" {
		t, err := relay.ParseTransport(f.transport)
		if err != nil {
			return nil, fmt.Errorf("--transport: %w", err)
		}
		cfg.Transport = t
	}
	apiURL, key, err := f.af.resolve()
	if err != nil {
		return nil, err
	}
	cfg.TLSConfig = f.af.tls
	hc := httpClient(f.af.tls)
	if f.username == "" {
		f.username = "relay-" + bench.NewRunID()
	}
	var auth string
	if key != "" {
		be, err := backend.New(apiURL, key, hc)
		if err != nil {
			return nil, err
		}
		if auth, err = be.CreateAuthToken(ctx, f.username, 0); err != nil {
			return nil, fmt.Errorf("auth token: %w", err)
		}
	}
	sc, err := session.Login(ctx, apiURL, f.username, auth, &session.Config{HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("log in as %s: %w", f.username, err)
	}
	return relay.New(sc, cfg), nil
}

func newRelayHostCmd() *cobra.Command {
	var (
		f       relayClientFlags
		maxCon  int
		region  string
		idle    time.Duration
		migrate bool
	)
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Allocate a relay allocation, print its join code, and pipe stdin/stdout to the peers that join",
		Long: `host logs in, allocates on the relay (in --region, or in the region with the
lowest measured round-trip time), and prints the join code on stderr:

  join code 7BCD9K (region eu, udp 203.0.113.7:37000)

Peers run 'switchboard relay join 7BCD9K'. Each line typed (stdin) goes to
every connected peer; what peers send is written to stdout as it came, so
two terminals chat and a pipe carries bytes. Lines on stderr say when a peer
joins or leaves ("* peer <allocation id> joined"). A line longer than the
largest relay message (1434 bytes) is sent in pieces.

With --migrate the host opts in to host migration: when its allocation
ends (it leaves, is killed, or is cut off), the relay holds its join code
for a while (10 s by default), and a peer that joined with 'relay join
--migrate' takes the session over as its host, with the same code; the
other peers reconnect to it.

host exits 0 at end of input or on Ctrl-C (releasing the allocation: peers
are disconnected and the code dies, unless a peer takes it over), and
non-zero with the reason when the allocation is lost or the relay cannot
be reached.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if idle < 0 || idle%time.Second != 0 {
				return fmt.Errorf("relay host: --idle-timeout %s: give whole seconds (the relay counts in seconds)", idle)
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			rc, err := f.client(ctx)
			if err != nil {
				return fmt.Errorf("relay host: %w", err)
			}
			c, err := rc.Host(ctx, relay.AllocateRequest{MaxConnections: maxCon, Region: region, IdleTimeout: idle, HostMigration: migrate})
			if err != nil {
				return fmt.Errorf("relay host: %w", describeRelay(err))
			}
			defer c.Close()
			fmt.Fprintf(cmd.ErrOrStderr(), "join code %s (%s)\n", c.JoinCode(), describeConn(c))
			in := readLines(cmd.InOrStdin())
			defer in.stop()
			if err := relayPipe(ctx, c, in, cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
				return fmt.Errorf("relay host: %w", err)
			}
			return nil
		},
	}
	f.register(cmd, true)
	fl := cmd.Flags()
	fl.IntVar(&maxCon, "max-connections", 4, "how many peers may join, 1 to 100")
	fl.StringVar(&region, "region", "", "the relay `REGION` (default: the one with the lowest measured RTT; see 'relay regions')")
	fl.DurationVar(&idle, "idle-timeout", 0, "how long the relay keeps the allocation through silence, whole seconds up to the deployment's cap (default: the relay's, 10s)")
	fl.BoolVar(&migrate, "migrate", false, "opt in to host migration: if this host dies, a peer joined with --migrate takes the session over with the same join code")
	return cmd
}

func newRelayJoinCmd() *cobra.Command {
	var (
		f       relayClientFlags
		migrate bool
		maxCon  int
	)
	cmd := &cobra.Command{
		Use:   "join CODE",
		Short: "Join a host with its join code, and pipe stdin/stdout to it through the relay",
		Long: `join logs in, joins the host's allocation with CODE (what 'switchboard relay
host' printed) and connects to the host through its relay node. Each line
typed (stdin) goes to the host; what the host sends is written to stdout as
it came. A line on stderr says when the connection to the host is made, and
when the host leaves. join first sends the host an empty message, so that a
host on a relay node without peer events learns of it at once.

With --migrate, when a host that opted in ('relay host --migrate') dies
or leaves, join takes the session over: it races the other peers for the
join code, and either becomes the host itself (stderr says "took the
session over", and it goes on as 'relay host' does, with the same code)
or reconnects to the peer that won. It does so again each time its host
goes.

join exits 0 at end of input or on Ctrl-C (leaving: the host sees the peer
leave), and non-zero with the reason when the code is unknown, the host is
full or leaves (and cannot be replaced, with --migrate), or the relay
cannot be reached.`,
		Args: exactArgs(argJoinCode),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			rc, err := f.client(ctx)
			if err != nil {
				return fmt.Errorf("relay join: %w", err)
			}
			c, err := rc.Join(ctx, args[0])
			if err != nil {
				return fmt.Errorf("relay join: %w", describeRelay(err))
			}
			defer func() { c.Close() }() // the last Conn: Migrate closes the ones before
			log := cmd.ErrOrStderr()
			fmt.Fprintf(log, "joined %s (%s) as peer %s\n", strings.ToUpper(args[0]), describeConn(c), c.ID())
			// An empty message tells a host on a relay node without peer
			// events that this peer is here (it writes nothing).
			_ = c.Send(ctx, c.HostID(), nil)
			in := readLines(cmd.InOrStdin())
			defer in.stop()
			for {
				err := relayPipe(ctx, c, in, cmd.OutOrStdout(), log)
				if err == nil || !migrate || c.IsHost() || ctx.Err() != nil || !ended(c) {
					if err != nil {
						return fmt.Errorf("relay join: %w", err)
					}
					return nil
				}
				// The host died, or this peer's own allocation did:
				// Migrate tells which and rejoins in the second case.
				fmt.Fprintf(log, "* connection ended (%s); taking the session over\n", err)
				next, merr := rc.Migrate(ctx, c, relay.AllocateRequest{MaxConnections: maxCon})
				if merr != nil {
					if ctx.Err() != nil {
						return nil // Ctrl-C while migrating
					}
					return fmt.Errorf("relay join: take the session over: %w", describeRelay(merr))
				}
				c = next
				if c.IsHost() {
					fmt.Fprintf(log, "* took the session over: hosting join code %s (%s)\n", c.JoinCode(), describeConn(c))
				} else {
					fmt.Fprintf(log, "* another peer took the session over: joined %s (%s) as peer %s\n", c.JoinCode(), describeConn(c), c.ID())
					_ = c.Send(ctx, c.HostID(), nil)
				}
			}
		},
	}
	f.register(cmd, true)
	fl := cmd.Flags()
	fl.BoolVar(&migrate, "migrate", false, "when a host that opted in to host migration dies, take the session over (or reconnect to the peer that did) with the same join code")
	fl.IntVar(&maxCon, "max-connections", 4, "with --migrate: how many peers may join when this peer takes over as host, 1 to 100")
	return cmd
}

func newRelayRegionsCmd() *cobra.Command {
	var f relayClientFlags
	cmd := &cobra.Command{
		Use:   "regions",
		Short: "List the relay regions with the round-trip time measured to each (QoS probes)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			rc, err := f.client(ctx)
			if err != nil {
				return fmt.Errorf("relay regions: %w", err)
			}
			rtts, err := rc.MeasureRegions(ctx)
			if errors.Is(err, relay.ErrNoQoSServer) {
				return errors.New("relay regions: no relay region: no healthy relay node is registered")
			}
			if err != nil {
				return fmt.Errorf("relay regions: %w", describeRelay(err))
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "REGION\tRTT\tANSWERED")
			for _, r := range rtts {
				rtt := "no answer"
				if r.Reachable() {
					rtt = r.RTT.Round(10 * time.Microsecond).String()
				}
				fmt.Fprintf(w, "%s\t%s\t%d/%d\n", orDash(r.Region), rtt, r.Answered, r.Endpoints)
			}
			return w.Flush()
		},
	}
	f.register(cmd, false)
	return cmd
}

// lines are the lines of stdin, read by one goroutine for the whole
// verb, so that a joiner that takes a session over (--migrate) keeps
// reading where it was.
type lines struct {
	chunks chan []byte   // a line, or a piece of one longer than a relay message
	eof    chan struct{} // closed when stdin ends
	quit   chan struct{} // closed by stop
}

// readLines starts reading in. The goroutine is not joined: a read of
// stdin cannot be interrupted; it ends with the process, or at the next
// line after stop.
func readLines(in io.Reader) *lines {
	l := &lines{chunks: make(chan []byte), eof: make(chan struct{}), quit: make(chan struct{})}
	go func() {
		defer close(l.eof)
		br := bufio.NewReaderSize(in, relay.DefaultMaxPayload)
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 {
				select {
				case l.chunks <- append([]byte(nil), line...):
				case <-l.quit:
					return
				}
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return
			}
		}
	}()
	return l
}

// stop tells the reader that nobody takes its lines any more.
func (l *lines) stop() { close(l.quit) }

// relayPipe sends the lines of in to c's peers (a host: to every
// connected peer) and writes what arrives to out; events go to log. It
// returns nil when in ends or ctx ends, and the reason when the
// connection ended first.
func relayPipe(ctx context.Context, c *relay.Conn, in *lines, out, log io.Writer) error {
	received := make(chan error, 1)
	go func() { // ends when c ends or is closed
		buf := make([]byte, relay.DefaultMaxPayload)
		for {
			n, _, err := c.Recv(context.Background(), buf)
			if errors.Is(err, relay.ErrClosed) {
				received <- nil
				return
			}
			if err != nil {
				continue // a message too large for buf; dropped
			}
			if _, err := out.Write(buf[:n]); err != nil {
				received <- fmt.Errorf("write stdout: %w", err)
				return
			}
		}
	}()
	go func() { // ends with c
		for ev := range c.Events() {
			switch ev.Type {
			case relay.EventPeerConnected:
				if c.IsHost() {
					fmt.Fprintf(log, "* peer %s joined\n", ev.Peer)
				} else {
					fmt.Fprintf(log, "* connected to host %s\n", ev.Peer)
				}
			case relay.EventPeerDisconnected:
				if c.IsHost() {
					fmt.Fprintf(log, "* peer %s left\n", ev.Peer)
				} else {
					fmt.Fprintf(log, "* host %s left\n", ev.Peer)
				}
			case relay.EventRebound:
				fmt.Fprintf(log, "* re-bound to the relay (%s)\n", strings.TrimPrefix(ev.Err.Error(), "relay: "))
			case relay.EventError:
				fmt.Fprintf(log, "! %s\n", strings.TrimPrefix(ev.Err.Error(), "relay: "))
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.Done():
			return connEnded(c.Err())
		case err := <-received:
			if err == nil { // Recv saw the Conn end: c.Done is closed too
				return connEnded(c.Err())
			}
			return err
		case <-in.eof:
			select {
			case b := <-in.chunks:
				_ = sendAll(ctx, c, b, log)
			default:
			}
			return nil
		case b := <-in.chunks:
			if err := sendAll(ctx, c, b, log); errors.Is(err, relay.ErrClosed) {
				return connEnded(c.Err())
			}
		}
	}
}

// sendAll sends b to every peer of c.
func sendAll(ctx context.Context, c *relay.Conn, b []byte, log io.Writer) error {
	peers := c.Peers()
	if len(peers) == 0 {
		fmt.Fprintln(log, "! no peer is connected yet; not sent")
		return nil
	}
	for _, p := range peers {
		if err := c.Send(ctx, p, b); err != nil {
			if errors.Is(err, relay.ErrClosed) {
				return err
			}
			fmt.Fprintf(log, "! send to %s: %s\n", p, strings.TrimPrefix(err.Error(), "relay: "))
		}
	}
	return nil
}

// ended reports whether c ended on its own (or was closed).
func ended(c *relay.Conn) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// connEnded describes why the connection ended.
func connEnded(err error) error {
	if err == nil || errors.Is(err, relay.ErrClosed) {
		return errors.New("the connection to the relay ended")
	}
	return describeRelay(err)
}

// describeRelay names the relay API's error codes and adds what to do to
// the errors people meet.
func describeRelay(err error) error {
	var ae *session.APIError
	if errors.As(err, &ae) && ae.ProblemCode != 0 {
		err = &describedError{fmt.Sprintf("%s: %s (%s %s, code %d)", relay.ProblemName(ae.ProblemCode), ae.Message, ae.Method, ae.Path, ae.ProblemCode), err}
	}
	switch {
	case errors.Is(err, relay.ErrJoinCodeNotFound):
		return fmt.Errorf("mistyped, or the host left: %w", err)
	case errors.Is(err, relay.ErrHostGone) && err.Error() == relay.ErrHostGone.Error():
		return &describedError{"the host left", err}
	case errors.Is(err, relay.ErrHostGone):
		return fmt.Errorf("the host left: %w", err)
	case errors.Is(err, relay.ErrRejected):
		return fmt.Errorf("the host is full: %w", err)
	}
	return err
}

// describedError is err said for people.
type describedError struct {
	msg string
	err error
}

func (e *describedError) Error() string { return e.msg }
func (e *describedError) Unwrap() error { return e.err }

// describeConn says where c is connected: "region eu, udp 203.0.113.7:37000".
func describeConn(c *relay.Conn) string {
	ep := c.Endpoint()
	return regionOf(c) + ep.ConnectionType + " " + hostPort(ep.Host, ep.Port)
}

// regionOf returns "region R, ", or "" for a relay node without a region.
func regionOf(c *relay.Conn) string {
	if c.Region() == "" {
		return ""
	}
	return "region " + c.Region() + ", "
}

func hostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}
