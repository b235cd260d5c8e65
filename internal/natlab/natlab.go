package natlab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Mode is how the two NATs map.
type Mode int

const (
	// EIM is plain `masquerade`: port-preserving, endpoint-independent
	// mapping with endpoint-dependent filtering, as most home routers do.
	// Hole punching works through it.
	EIM Mode = iota
	// Symmetric is `masquerade random`: a new source port per destination.
	// Hole punching fails through it.
	Symmetric
)

// String returns "eim" or "symmetric".
func (m Mode) String() string {
	if m == Symmetric {
		return "symmetric"
	}
	return "eim"
}

// The lab's addresses (nat-lab.md), from the benchmark range 198.18.0.0/15.
var (
	HubAddr   = netip.MustParseAddr("198.18.0.1") // the hub, on the WAN
	NATAAddr  = netip.MustParseAddr("198.18.0.2") // natA's WAN address: peer a's public address
	NATBAddr  = netip.MustParseAddr("198.18.0.3") // natB's WAN address: peer b's public address
	PeerAAddr = netip.MustParseAddr("198.19.1.2") // peer a, behind natA
	PeerBAddr = netip.MustParseAddr("198.19.2.2") // peer b, behind natB
)

// Side names one half of the lab: peer a behind natA, or peer b behind natB.
type Side int

// The sides.
const (
	A Side = iota
	B
)

// String returns "a" or "b".
func (s Side) String() string { return string(rune('a' + s)) }

// Lab is one built topology. Its namespace names are the fields; the
// addresses are the package variables.
type Lab struct {
	Mode Mode
	Hub  string    // the hub's namespace
	NAT  [2]string // natA's and natB's namespaces, by Side
	Peer [2]string // peer a's and peer b's namespaces, by Side
	wan  string    // the bridge's namespace
}

// PeerAddrOf returns the LAN address of side s's peer.
func PeerAddrOf(s Side) netip.Addr {
	if s == A {
		return PeerAAddr
	}
	return PeerBAddr
}

// PublicAddrOf returns the WAN address of side s's NAT: its peer's public
// address.
func PublicAddrOf(s Side) netip.Addr {
	if s == A {
		return NATAAddr
	}
	return NATBAddr
}

// Require skips t when the lab cannot be built here (not root, no ip or nft
// binary) outside CI, and fails it with the same reason inside CI (the CI
// environment variable set, as .ci/run does).
func Require(t testing.TB) {
	t.Helper()
	if reason := missing(); reason != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("natlab: %s (CI must run the NAT tests: run as root; scripts/test installs iproute2 and nftables)", reason)
		}
		t.Skipf("natlab: %s; the NAT tests need root, iproute2 and nftables (scripts/test as root installs them)", reason)
	}
}

func missing() string {
	if os.Geteuid() != 0 {
		return "not running as root"
	}
	for _, bin := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			return bin + " is not installed"
		}
	}
	return ""
}

// New builds a lab whose NATs map as mode, and deletes it when the test
// ends. It calls [Require] first.
func New(t testing.TB, mode Mode) *Lab {
	t.Helper()
	Require(t)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	prefix := "sb" + hex.EncodeToString(rnd[:])
	l := &Lab{
		Mode: mode,
		wan:  prefix + "-wan",
		Hub:  prefix + "-hub",
		NAT:  [2]string{prefix + "-nata", prefix + "-natb"},
		Peer: [2]string{prefix + "-a", prefix + "-b"},
	}
	t.Cleanup(l.teardown)
	if err := l.build(); err != nil {
		t.Fatalf("natlab: build %s lab: %v", mode, err)
	}
	return l
}

func (l *Lab) namespaces() []string {
	return []string{l.wan, l.Hub, l.NAT[0], l.NAT[1], l.Peer[0], l.Peer[1]}
}

// teardown deletes every namespace of the lab; deleting a namespace removes
// its interfaces (and so the veth peers elsewhere) and its ruleset.
func (l *Lab) teardown() {
	for _, ns := range l.namespaces() {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
}

func (l *Lab) build() error {
	for _, ns := range l.namespaces() {
		if err := run("ip", "netns", "add", ns); err != nil {
			return err
		}
		if err := run("ip", "-n", ns, "link", "set", "lo", "up"); err != nil {
			return err
		}
	}
	steps := [][]string{
		{"ip", "-n", l.wan, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", l.wan, "link", "set", "br0", "up"},
	}
	wanAddr := map[string]netip.Addr{l.Hub: HubAddr, l.NAT[0]: NATAAddr, l.NAT[1]: NATBAddr}
	for i, ns := range []string{l.Hub, l.NAT[0], l.NAT[1]} {
		port := "p" + strconv.Itoa(i)
		steps = append(steps,
			[]string{"ip", "-n", l.wan, "link", "add", port, "type", "veth", "peer", "name", "wan0", "netns", ns},
			[]string{"ip", "-n", l.wan, "link", "set", port, "master", "br0", "up"},
			[]string{"ip", "-n", ns, "addr", "add", wanAddr[ns].String() + "/24", "dev", "wan0"},
			[]string{"ip", "-n", ns, "link", "set", "wan0", "up"},
		)
	}
	for s := A; s <= B; s++ {
		nat, peer := l.NAT[s], l.Peer[s]
		lan := fmt.Sprintf("198.19.%d.", s+1)
		steps = append(steps,
			[]string{"ip", "-n", nat, "link", "add", "lan0", "type", "veth", "peer", "name", "eth0", "netns", peer},
			[]string{"ip", "-n", nat, "addr", "add", lan + "1/24", "dev", "lan0"},
			[]string{"ip", "-n", nat, "link", "set", "lan0", "up"},
			[]string{"ip", "-n", peer, "addr", "add", PeerAddrOf(s).String() + "/24", "dev", "eth0"},
			[]string{"ip", "-n", peer, "link", "set", "eth0", "up"},
			[]string{"ip", "-n", peer, "route", "add", "default", "via", lan + "1"},
			[]string{"ip", "netns", "exec", nat, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		)
	}
	for _, st := range steps {
		if err := run(st...); err != nil {
			return err
		}
	}
	for s := A; s <= B; s++ {
		if err := nft(l.NAT[s], natRules(l.Mode)); err != nil {
			return err
		}
	}
	return nft(l.Hub, hubRules)
}

// natRules is a NAT's ruleset (nat-lab.md). The block chain, before the
// forward filter, holds the drop rules of [Lab.Block].
func natRules(m Mode) string {
	masq := "masquerade"
	if m == Symmetric {
		masq = "masquerade random"
	}
	return `table ip natlab {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "wan0" ` + masq + `
	}
	chain block {
		type filter hook forward priority -10; policy accept;
	}
	chain forward {
		type filter hook forward priority 0; policy drop;
		iifname "lan0" accept
		ct state established,related accept
	}
	chain input {
		type filter hook input priority 0; policy accept;
		iifname "wan0" ct state established,related accept
		iifname "wan0" drop
	}
}
`
}

// hubRules counts, in the hub's namespace, the UDP and TCP packets that
// reach it.
const hubRules = `table ip natlab {
	chain input {
		type filter hook input priority 0; policy accept;
		meta l4proto udp counter comment "udp"
		meta l4proto tcp counter comment "tcp"
	}
}
`

func nft(ns, rules string) error {
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft -f in %s: %w: %s", ns, err, bytes.TrimSpace(out))
	}
	return nil
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func output(args ...string) (string, error) {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// Count is what the hub's counter saw.
type Count struct {
	Packets, Bytes uint64
}

var counterRE = regexp.MustCompile(`meta l4proto (udp|tcp) counter packets (\d+) bytes (\d+)`)

// HubCount returns the UDP and TCP packets (and bytes) that have reached
// the hub's namespace so far.
func (l *Lab) HubCount() (udp, tcp Count, err error) {
	out, err := output("ip", "netns", "exec", l.Hub, "nft", "list", "chain", "ip", "natlab", "input")
	if err != nil {
		return udp, tcp, err
	}
	found := 0
	for _, m := range counterRE.FindAllStringSubmatch(out, -1) {
		p, _ := strconv.ParseUint(m[2], 10, 64)
		b, _ := strconv.ParseUint(m[3], 10, 64)
		if m[1] == "udp" {
			udp = Count{p, b}
		} else {
			tcp = Count{p, b}
		}
		found++
	}
	if found != 2 {
		return udp, tcp, fmt.Errorf("natlab: hub counters not found in %q", out)
	}
	return udp, tcp, nil
}

var handleRE = regexp.MustCompile(`# handle (\d+)`)

// Block inserts a drop rule at side s's NAT for every packet forwarded to
// or from addr (the other peer's public address breaks the direct path and
// leaves the hub reachable). The returned undo removes it; it is safe to
// call more than once.
func (l *Lab) Block(s Side, addr netip.Addr) (undo func() error, err error) {
	ns := l.NAT[s]
	out, err := output("ip", "netns", "exec", ns, "nft", "--echo", "--handle", "add", "rule", "ip", "natlab", "block",
		"ip", "saddr", addr.String(), "drop")
	if err != nil {
		return nil, err
	}
	out2, err := output("ip", "netns", "exec", ns, "nft", "--echo", "--handle", "add", "rule", "ip", "natlab", "block",
		"ip", "daddr", addr.String(), "drop")
	if err != nil {
		return nil, err
	}
	var handles []string
	for _, o := range []string{out, out2} {
		m := handleRE.FindStringSubmatch(o)
		if m == nil {
			return nil, fmt.Errorf("natlab: no rule handle in %q", o)
		}
		handles = append(handles, m[1])
	}
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			for _, h := range handles {
				if e := run("ip", "netns", "exec", ns, "nft", "delete", "rule", "ip", "natlab", "block", "handle", h); e != nil {
					err = errors.Join(err, e)
				}
			}
		})
		return err
	}, nil
}

// Command returns a command that runs name with args in namespace ns (as
// `ip netns exec ns name args...`), bound to ctx.
func (l *Lab) Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// Do runs fn with the calling goroutine's OS thread in namespace ns.
// Sockets fn opens belong to ns and keep working after Do returns; fn must
// not start goroutines that open sockets (they would run on other threads,
// in the original namespace). If the thread cannot be moved back, it is
// left locked so that it dies with the goroutine instead of serving other
// goroutines from the wrong namespace.
func (l *Lab) Do(ns string, fn func() error) error {
	target, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		return fmt.Errorf("natlab: open namespace: %w", err)
	}
	defer target.Close()
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("natlab: open own namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("natlab: enter %s: %w", ns, err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		return errors.Join(ferr, fmt.Errorf("natlab: leave %s: %w", ns, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// DialContext returns a dial function whose connections are made from
// namespace ns (for an http.Transport: a test in the root namespace
// reaching the hub's API). Each dial runs on its own locked OS thread.
func (l *Lab) DialContext(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := l.Do(ns, func() (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}
