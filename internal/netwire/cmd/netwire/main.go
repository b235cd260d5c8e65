// Command netwire joins two TUN devices with a user-space wire that
// delays, jitters and loses IP packets (package internal/netwire), for
// benchmark links on kernels without sch_netem. scripts/netem builds it
// into bin/ and starts it when a delay is asked for; it is not part of the
// product.
//
//	netwire --a sbperf0 --b sbperf1 --b-netns sbperf --delay 20ms --loss 2
//
// --delay, --jitter and --loss apply to both directions; --loss-ab and
// --loss-ba set one direction's loss.
//
// It runs until SIGTERM or SIGINT, then prints its counters and exits;
// SIGUSR1 prints them without stopping. Needs root (CAP_NET_ADMIN).
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/switchboardgg/switchboard/internal/netwire"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "netwire:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfg                     netwire.Config
		f                       netwire.Faults
		a, aNS, b, bNS          string
		lossPct, lossAB, lossBA float64
		readyFile               string
	)
	flag.StringVar(&a, "a", "", "the first TUN device (required)")
	flag.StringVar(&aNS, "a-netns", "", "the first device's network namespace (default: this one)")
	flag.StringVar(&b, "b", "", "the second TUN device (required)")
	flag.StringVar(&bNS, "b-netns", "", "the second device's network namespace (default: this one)")
	flag.DurationVar(&f.Delay, "delay", 0, "one-way delay, each direction (e.g. 20ms)")
	flag.DurationVar(&f.Jitter, "jitter", 0, "extra uniform delay in [0, jitter) per packet; order is kept unless --reorder")
	flag.BoolVar(&f.Reorder, "reorder", false, "let jittered packets overtake each other")
	flag.Float64Var(&lossPct, "loss", 0, "percentage of packets lost, each direction (e.g. 2)")
	flag.Float64Var(&lossAB, "loss-ab", -1, "percentage lost from a to b; -1: as --loss")
	flag.Float64Var(&lossBA, "loss-ba", -1, "percentage lost from b to a; -1: as --loss")
	flag.IntVar(&cfg.Limit, "limit", netwire.DefaultLimit, "most packets waiting in each direction; more are dropped and counted")
	flag.IntVar(&cfg.MaxPacket, "max-packet", netwire.DefaultMaxPacket, "largest packet carried, bytes (at least the devices' MTU)")
	flag.Uint64Var(&cfg.Seed, "seed", 0, "seed of the loss and jitter draws (0: random)")
	flag.StringVar(&readyFile, "ready-file", "", "write this file once both devices are open")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: netwire --a DEV [--a-netns NS] --b DEV [--b-netns NS] [--delay D] [--jitter D] [--loss PCT]\n\n"+
			"Moves IP packets between two TUN devices after a delay, for test and benchmark links.\n"+
			"SIGUSR1 prints the counters; SIGTERM or SIGINT prints them and exits.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if a == "" || b == "" || flag.NArg() > 0 {
		flag.Usage()
		return errors.New("--a and --b are required, and nothing else")
	}
	cfg.AB, cfg.BA = f, f
	cfg.AB.Loss, cfg.BA.Loss = lossPct/100, lossPct/100
	if lossAB >= 0 {
		cfg.AB.Loss = lossAB / 100
	}
	if lossBA >= 0 {
		cfg.BA.Loss = lossBA / 100
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	w, err := netwire.New(cfg)
	if err != nil {
		return err
	}
	fa, err := netwire.OpenTUN(a, aNS)
	if err != nil {
		return err
	}
	fb, err := netwire.OpenTUN(b, bNS)
	if err != nil {
		fa.Close()
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	served := make(chan error, 1)
	go func() { served <- w.Serve(fa, fb) }()
	log.Info("netwire serving", "a", a, "b", b, "delay", f.Delay, "jitter", f.Jitter,
		"reorder", f.Reorder, "loss_ab", cfg.AB.Loss, "loss_ba", cfg.BA.Loss, "limit", cfg.Limit, "seed", w.Seed())
	if readyFile != "" {
		if err := os.WriteFile(readyFile, []byte("ready\n"), 0o644); err != nil {
			w.Close()
			<-served
			return fmt.Errorf("ready file: %w", err)
		}
	}
	for {
		select {
		case err := <-served:
			logStats(log, w)
			return err
		case s := <-sigs:
			logStats(log, w)
			if s == syscall.SIGUSR1 {
				continue
			}
			w.Close()
			if err := <-served; !errors.Is(err, netwire.ErrClosed) {
				return err
			}
			return nil
		}
	}
}

func logStats(log *slog.Logger, w *netwire.Wire) {
	st := w.Stats()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		pkts := st.AB.Received + st.BA.Received
		perPkt := 0.0
		if pkts > 0 {
			perPkt = float64(cpu.Microseconds()) / float64(pkts)
		}
		log.Info("netwire cpu", "cpu", cpu.Round(time.Millisecond), "packets", pkts, "us_per_packet", fmt.Sprintf("%.2f", perPkt))
	}
	for _, d := range []struct {
		name string
		s    netwire.DirStats
	}{{"a→b", st.AB}, {"b→a", st.BA}} {
		log.Info("netwire stats", "dir", d.name, "received", d.s.Received, "forwarded", d.s.Forwarded,
			"lost", d.s.Lost, "overflowed", d.s.Overflowed, "oversized", d.s.Oversized, "write_errors", d.s.WriteErrors)
	}
}
