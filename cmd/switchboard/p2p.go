package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchboardgg/switchboard/bench"
	"github.com/switchboardgg/switchboard/client/backend"
	"github.com/switchboardgg/switchboard/client/p2p"
	"github.com/switchboardgg/switchboard/client/session"
)

func newP2PCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "p2p",
		Short: "Talk to the peers of a P2P network through its hub",
	}
	cmd.AddCommand(newP2PChatCmd())
	return cmd
}

func newP2PChatCmd() *cobra.Command {
	var (
		af       apiFlags
		network  string
		joinCode string
		username string
		fopt     fileOptions
	)
	cmd := &cobra.Command{
		Use:   "chat --network NAME",
		Short: "Chat with the peers of a network: each line goes to every peer",
		Long: `chat logs in (an auth token minted with the server key, or with none when
there is no key and the server runs --allow-anonymous), joins the network
through the P2P API and connects to its hub. Each line typed is broadcast to
every other peer of the network; joins and leaves are printed as they happen.

Commands:
  /peers             list the other peers
  /msg PEER text     send text to one peer only
  /udp PEER text     send text to one peer as a UDP datagram
  /punch PEER [udp|tcp]
                     punch a direct path to PEER (default udp): from then on
                     what you send PEER goes straight to it, not through
                     the hub, while the path is up
  /send PEER FILE    send a file on reliable channel Ch1 (UDP, through the
                     hub or direct), with progress lines; the receiver saves
                     it in --save-dir under a safe new name, never
                     overwriting, up to --max-file-size
  /quit              leave (so does end of input, or Ctrl-C)

Each change of the path to a peer is printed as "* path to PEER: PATH",
where PATH is hub, direct-udp or direct-tcp; /peers shows each peer's path.

Lines received are printed as "<peer> text", or "<peer> (to you) text" for a
/msg or a /udp. chat exits 0 when you leave, and non-zero with the reason when the hub
ends the connection (kicked, shutting down, …) or the join fails.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if network == "" && joinCode == "" {
				return errors.New("p2p chat: give --network or --join-code")
			}
			if st, err := os.Stat(fopt.dir); err != nil || !st.IsDir() {
				return fmt.Errorf("p2p chat: --save-dir %q is not a directory", fopt.dir)
			}
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			if username == "" {
				username = "chat-" + bench.NewRunID()
			}
			sc, err := p2pLogin(ctx, &af, username)
			if err != nil {
				return fmt.Errorf("p2p chat: %w", err)
			}
			peer, err := p2p.Join(ctx, sc, p2p.JoinRequest{Network: network, JoinCode: joinCode}, nil)
			if err != nil {
				return fmt.Errorf("p2p chat: %w", err)
			}
			defer peer.Close()
			err = chat(ctx, peer, fopt, cmd.InOrStdin(), cmd.OutOrStdout())
			if err != nil {
				return fmt.Errorf("p2p chat: %w", err)
			}
			return nil
		},
	}
	af.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&network, "network", "", "the network's `NAME` (made by the first join when it does not exist)")
	fl.StringVar(&joinCode, "join-code", "", "the network's join `CODE`, when it has one")
	fl.StringVar(&username, "username", "", "your `NAME` (default: chat-<random>)")
	fl.StringVar(&fopt.dir, "save-dir", ".", "the `DIR` where files sent to you with /send are saved")
	fl.Int64Var(&fopt.maxSize, "max-file-size", defaultMaxFileSize, "the largest file accepted from /send, in `BYTES`")
	return cmd
}

// p2pLogin logs username in: with an auth token minted with the server
// key, or without one when there is no key (the server must allow
// anonymous logins).
func p2pLogin(ctx context.Context, af *apiFlags, username string) (*session.Client, error) {
	apiURL, key, err := af.resolve()
	if err != nil {
		return nil, err
	}
	var auth string
	if key != "" {
		be, err := backend.New(apiURL, key, nil)
		if err != nil {
			return nil, err
		}
		if auth, err = be.CreateAuthToken(ctx, username, 0); err != nil {
			return nil, fmt.Errorf("auth token: %w", err)
		}
	}
	sc, err := session.Login(ctx, apiURL, username, auth, nil)
	if err != nil {
		return nil, fmt.Errorf("log in as %s: %w", username, err)
	}
	return sc, nil
}

// chatRegisterWait is how long chat waits for the peer's UDP
// registration before it says it joined.
const chatRegisterWait = 3 * time.Second

// chat runs the chat loop of peer: lines of in are sent, messages and
// events are written to out. It returns nil when in ends, /quit is typed
// or ctx ends, and the reason when the connection ended first.
func chat(ctx context.Context, peer *p2p.Peer, fopt fileOptions, in io.Reader, out io.Writer) error {
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	// "joined" means ready: UDP through the hub registered (REGISTERED,
	// after the hub checked the endpoint), so that another peer's
	// /punch to this one right away finds its endpoint. A hub whose UDP
	// does not answer is said, not waited for.
	if reg := peer.Registered(); reg != nil {
		t := time.NewTimer(chatRegisterWait)
		select {
		case <-reg:
		case <-t.C:
			say("(UDP through the hub has not answered within %v: messages go over TLS; /udp, /send and /punch wait for it)", chatRegisterWait)
		case <-ctx.Done():
		}
		t.Stop()
	}
	say("joined network %s as %s", peer.Network(), peer.ID())

	var wg sync.WaitGroup
	defer wg.Wait()
	fs := newFiles(peer, fopt, say)
	defer fs.wait()
	defer peer.Close() // closes Events, Messages and Reliable, ending the printers
	wg.Go(func() { fs.receive(ctx) })
	wg.Go(func() {
		for ev := range peer.Events() {
			switch ev.Type {
			case p2p.EventPeerJoined:
				say("* %s joined", ev.Peer)
			case p2p.EventPeerLeft:
				say("* %s left", ev.Peer)
			case p2p.EventError:
				say("! %s", strings.TrimPrefix(ev.Err.Error(), "p2p: "))
			case p2p.EventDisconnected:
				say("! connection to the hub lost (%s); resuming", strings.TrimPrefix(ev.Err.Error(), "p2p: "))
			case p2p.EventResumed:
				say("* resumed as %s", peer.ID())
			case p2p.EventPath:
				say("* path to %s: %s", ev.Peer, ev.Path)
			}
		}
	})
	wg.Go(func() {
		for m := range peer.Messages() {
			if m.Broadcast {
				say("<%s> %s", m.From, printable(m.Payload))
			} else {
				say("<%s> (to you) %s", m.From, printable(m.Payload))
			}
		}
	})

	lines := make(chan string)
	readDone := make(chan struct{})
	go func() { // not joined: a read of stdin cannot be interrupted; it ends with the process
		defer close(readDone)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 0, 4096), 64<<10)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-peer.Done():
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-peer.Done():
			return hubEnded(peer.Err())
		case <-readDone:
			return nil
		case line := <-lines:
			quit, err := chatLine(ctx, peer, fs, line, say)
			if err != nil {
				if errors.Is(err, p2p.ErrClosed) {
					return hubEnded(peer.Err())
				}
				say("! %s", strings.TrimPrefix(err.Error(), "p2p: "))
			}
			if quit {
				return nil
			}
		}
	}
}

// hubEnded describes why the hub ended the connection.
func hubEnded(err error) error {
	if err == nil || errors.Is(err, p2p.ErrClosed) && !errors.As(err, new(*p2p.HubError)) {
		return errors.New("the connection to the hub ended")
	}
	return fmt.Errorf("the hub ended the connection: %s", strings.TrimPrefix(err.Error(), "p2p: "))
}

// chatLine acts on one typed line, and reports whether it was /quit.
func chatLine(ctx context.Context, peer *p2p.Peer, fs *files, line string, say func(string, ...any)) (bool, error) {
	switch {
	case strings.TrimSpace(line) == "":
		return false, nil
	case line == "/quit":
		return true, nil
	case line == "/peers":
		peers := peer.Peers()
		if len(peers) == 0 {
			say("no other peers")
		}
		for _, p := range peers {
			say("  %s (%s)", p, peer.PathTo(p))
		}
		return false, nil
	case line == "/udp" || strings.HasPrefix(line, "/udp "):
		to, text, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "/udp")), " ")
		if !ok || to == "" || text == "" {
			return false, errors.New("usage: /udp PEER text")
		}
		// The hub drops a datagram to an unknown peer without a word (it
		// answers nothing on UDP): say so here, as /msg's hub error does.
		if !slices.Contains(peer.Peers(), to) {
			return false, fmt.Errorf("/udp: no peer %s in this network (see /peers)", printable([]byte(to)))
		}
		return false, peer.SendUDP(ctx, to, p2p.Envelope{Header: "chat", Payload: []byte(text)})
	case line == "/punch" || strings.HasPrefix(line, "/punch "):
		return false, chatPunch(ctx, peer, strings.Fields(line)[1:], say)
	case line == "/msg" || strings.HasPrefix(line, "/msg "):
		to, text, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "/msg")), " ")
		if !ok || to == "" || text == "" {
			return false, errors.New("usage: /msg PEER text")
		}
		return false, peer.Send(ctx, to, p2p.Envelope{Header: "chat", Payload: []byte(text)})
	case line == "/send" || strings.HasPrefix(line, "/send "):
		return false, fs.send(ctx, strings.TrimPrefix(line, "/send"))
	case strings.HasPrefix(line, "/"):
		return false, errors.New("unknown command; try /peers, /msg PEER text, /udp PEER text, /send PEER FILE, /punch PEER [udp|tcp] or /quit")
	}
	return false, peer.Broadcast(ctx, p2p.Envelope{Header: "chat", Payload: []byte(line)})
}

// printable returns the payload as text with control characters
// replaced, so that a peer cannot drive the terminal.
func printable(b []byte) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(string(b), "?"))
}

// chatPunch runs /punch PEER [udp|tcp]: it waits for the punch (the
// client's default timeout) and says how it went; the path change itself
// is printed from the events.
func chatPunch(ctx context.Context, peer *p2p.Peer, args []string, say func(string, ...any)) error {
	if len(args) < 1 || len(args) > 2 {
		return errors.New("usage: /punch PEER [udp|tcp]")
	}
	transport := p2p.PunchUDP
	if len(args) == 2 {
		switch args[1] {
		case "udp":
		case "tcp":
			transport = p2p.PunchTCP
		default:
			return fmt.Errorf("/punch: transport %q: want udp or tcp", args[1])
		}
	}
	say("* punching to %s over %s", args[0], transport)
	if err := peer.Punch(ctx, args[0], transport); err != nil {
		if errors.Is(err, p2p.ErrPunchFailed) {
			return fmt.Errorf("punch to %s over %s failed: no direct path (a symmetric NAT or a firewall); staying on the hub", args[0], transport)
		}
		return err
	}
	return nil
}
