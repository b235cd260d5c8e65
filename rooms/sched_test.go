package rooms_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/rooms"
)

// TestSchedulerCost compares the CPU of the shared tick scheduler
// (Engine.Run) with a goroutine and a time.Ticker per room, for 2,500
// playing 4-seat rooms at 30 Hz whose peers write nothing. It runs only
// with SWITCHBOARD_ROOMS_SCHED=1; the result decided the design (see
// doc.go).
func TestSchedulerCost(t *testing.T) {
	if os.Getenv("SWITCHBOARD_ROOMS_SCHED") == "" {
		t.Skip("set SWITCHBOARD_ROOMS_SCHED=1")
	}
	const n, window = 2500, 3 * time.Second
	setup := func() (*rooms.Engine, []*rooms.Room) {
		e, err := rooms.New(rooms.Config{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		rs := make([]*rooms.Room, n)
		for i := range rs {
			r, err := e.Open(frameRoom(fmt.Sprintf("room-%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			for s := range 4 {
				_ = r.Admit(s, "u", session(s))
				if _, err := r.Join(s, session(s), &writerPeer{}); err != nil {
					t.Fatal(err)
				}
			}
			rs[i] = r
		}
		return e, rs
	}
	measure := func(name string, run func(ctx context.Context, e *rooms.Engine, rs []*rooms.Room)) {
		e, rs := setup()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { run(ctx, e, rs) })
		time.Sleep(time.Second)
		f0, c0, w0 := frames(rs), cpuTime(), time.Now()
		time.Sleep(window)
		f1, c1, w1 := frames(rs), cpuTime(), time.Now()
		cancel()
		wg.Wait()
		sec := w1.Sub(w0).Seconds()
		t.Logf("%-22s %.3f cores, %.0f ticks/s (%.0f expected)", name, (c1-c0).Seconds()/sec, float64(f1-f0)/sec, float64(n*30))
	}
	measure("shared scheduler", func(ctx context.Context, e *rooms.Engine, _ []*rooms.Room) { _ = e.Run(ctx) })
	measure("goroutine+ticker/room", func(ctx context.Context, _ *rooms.Engine, rs []*rooms.Room) {
		var wg sync.WaitGroup
		for _, r := range rs {
			wg.Go(func() {
				tk := time.NewTicker(time.Second / 30)
				defer tk.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case now := <-tk.C:
						r.Tick(now)
					}
				}
			})
		}
		wg.Wait()
	})
}

func frames(rs []*rooms.Room) (n uint64) {
	for _, r := range rs {
		n += uint64(r.Frame())
	}
	return n
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
