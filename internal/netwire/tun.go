package netwire

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenTUN attaches to the TUN device name in network namespace netns (a
// name under /var/run/netns, as `ip netns add` makes, or a path; "" is the
// caller's own), creating it if it does not exist (a device created here
// disappears when the file is closed; one made with `ip tuntap add`
// persists). The device carries bare IP packets (IFF_TUN|IFF_NO_PI). The
// file is non-blocking, so reads take deadlines; it belongs to the
// caller. Needs CAP_NET_ADMIN.
func OpenTUN(name, netns string) (*os.File, error) {
	var f *os.File
	err := inNetns(netns, func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("netwire: open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("netwire: device name %q: %w", name, err)
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("netwire: attach TUN %s: %w", name, err)
		}
		f = os.NewFile(uintptr(fd), "tun:"+name)
		return nil
	})
	return f, err
}

// inNetns runs fn with the calling goroutine's OS thread in network
// namespace ns ("" runs it where it is). A file descriptor fn opens keeps
// its namespace after inNetns returns. If the thread cannot be moved back,
// it stays locked so that it dies with the goroutine instead of serving
// others from the wrong namespace (as internal/natlab's Lab.Do).
func inNetns(ns string, fn func() error) error {
	if ns == "" {
		return fn()
	}
	path := ns
	if !strings.Contains(ns, "/") {
		path = "/var/run/netns/" + ns
	}
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("netwire: open namespace: %w", err)
	}
	defer target.Close()
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netwire: open own namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netwire: enter %s: %w", ns, err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		return errors.Join(ferr, fmt.Errorf("netwire: leave %s: %w", ns, err))
	}
	runtime.UnlockOSThread()
	return ferr
}
