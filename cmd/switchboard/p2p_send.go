package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboardgg/switchboard/client/p2p"
)

// The file transfer of `p2p chat` (/send PEER FILE): reliable messages on
// Ch1, in order:
//
//	file-begin  pairs id, name, size          the receiver opens the file (or refuses)
//	file-data   pair id; payload: the next bytes (fileChunk at most)
//	file-end    pairs id, sha256 (hex)        the receiver checks and keeps the file
//	file-status pairs id, status (saved|refused|failed), reason   receiver → sender
const (
	fileChunk = 32 << 10
	// defaultMaxFileSize bounds a received file unless --max-file-size.
	defaultMaxFileSize = 256 << 20
	// maxIncoming bounds the files being received at once.
	maxIncoming = 4
	// maxSafeName bounds the saved file's name, in bytes.
	maxSafeName = 100
	// fileStall is how long an incoming file may go without data before
	// a new file may take its place: without it, a peer that announces
	// maxIncoming files and sends nothing holds every place for as long
	// as it stays.
	fileStall = time.Minute
)

// fileOptions are the chat's flags about received files.
type fileOptions struct {
	dir     string // where received files are saved
	maxSize int64  // the largest file accepted, in bytes
}

// files sends and receives the chat's files.
type files struct {
	peer *p2p.Peer
	opt  fileOptions
	say  func(string, ...any)
	wg   sync.WaitGroup // the senders
	next atomic.Uint64  // transfer ids

	mu   sync.Mutex
	sent map[string]string // guarded by mu: id → name of the files sent and not yet answered

	// owned by receive
	in map[string]*incoming // from + " " + id
}

type incoming struct {
	from, name string
	size, got  int64
	f          *os.File
	path       string // where f is: dir and the safe name
	sum        hashWriter
	last       time.Time // begin or the last data
}

type hashWriter interface {
	io.Writer
	Sum([]byte) []byte
}

func newFiles(peer *p2p.Peer, opt fileOptions, say func(string, ...any)) *files {
	return &files{peer: peer, opt: opt, say: say, in: map[string]*incoming{}, sent: map[string]string{}}
}

// send starts sending a file: "/send PEER FILE". The transfer runs on its
// own goroutine and prints its progress.
func (fs *files) send(ctx context.Context, args string) error {
	to, path, ok := strings.Cut(strings.TrimSpace(args), " ")
	path = strings.TrimSpace(path)
	if !ok || to == "" || path == "" {
		return errors.New("usage: /send PEER FILE")
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		_ = f.Close()
		return fmt.Errorf("send: %s is not a regular file", path)
	}
	id := strconv.FormatUint(fs.next.Add(1), 10)
	name := filepath.Base(path)
	begin := p2p.Envelope{Header: "file-begin", Pairs: []p2p.Pair{{Key: "id", Value: id}, {Key: "name", Value: truncate(name, 1024)},
		{Key: "size", Value: strconv.FormatInt(st.Size(), 10)}}}
	if err := fs.peer.SendReliable(ctx, to, p2p.Ch1, begin); err != nil {
		_ = f.Close()
		return fmt.Errorf("send %s: %w", name, err)
	}
	fs.mu.Lock()
	if len(fs.sent) < 1000 {
		fs.sent[id] = name
	}
	fs.mu.Unlock()
	fs.wg.Go(func() {
		defer f.Close()
		if err := fs.stream(ctx, to, id, name, f, st.Size()); err != nil {
			fs.say("! send %s to %s: %s", name, to, strings.TrimPrefix(err.Error(), "p2p: "))
		}
	})
	return nil
}

// stream sends the file's bytes and its checksum, printing progress at
// each quarter.
func (fs *files) stream(ctx context.Context, to, id, name string, f io.Reader, size int64) error {
	h := sha256.New()
	buf := make([]byte, fileChunk)
	idPair := []p2p.Pair{{Key: "id", Value: id}}
	var sent int64
	quarter := 0
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			h.Write(buf[:n])
			if err := fs.peer.SendReliable(ctx, to, p2p.Ch1, p2p.Envelope{Header: "file-data", Pairs: idPair, Payload: buf[:n]}); err != nil {
				return err
			}
			sent += int64(n)
			if size > 0 && int(sent*4/size) > quarter {
				quarter = int(sent * 4 / size)
				fs.say("send %s to %s: %d%% (%s of %s)", name, to, quarter*25, sizeText(sent), sizeText(size))
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
	if sent != size {
		return fmt.Errorf("the file changed while it was sent (%d bytes, not %d)", sent, size)
	}
	end := p2p.Envelope{Header: "file-end", Pairs: []p2p.Pair{{Key: "id", Value: id}, {Key: "sha256", Value: hex.EncodeToString(h.Sum(nil))}}}
	if err := fs.peer.SendReliable(ctx, to, p2p.Ch1, end); err != nil {
		return err
	}
	if size == 0 {
		fs.say("send %s to %s: 100%% (0 B)", name, to)
	}
	return nil
}

// receive handles the reliable messages until the connection ends, then
// removes the files left incomplete.
func (fs *files) receive(ctx context.Context) {
	defer func() {
		for k, in := range fs.in {
			fs.abandon(k, in)
		}
	}()
	for m := range fs.peer.Reliable() {
		id := pair(m.Pairs, "id")
		key := m.From + " " + id
		switch m.Header {
		case "file-begin":
			fs.begin(ctx, m, key, id)
		case "file-data":
			in := fs.in[key]
			if in == nil { // refused, dropped, or never announced
				continue
			}
			if in.got+int64(len(m.Payload)) > in.size {
				fs.fail(ctx, key, in, id, "more bytes than announced")
				continue
			}
			if _, err := in.f.Write(m.Payload); err != nil {
				fs.fail(ctx, key, in, id, "cannot write: "+err.Error())
				continue
			}
			in.sum.Write(m.Payload)
			in.got += int64(len(m.Payload))
			in.last = time.Now()
		case "file-end":
			in := fs.in[key]
			if in == nil {
				continue
			}
			if in.got != in.size || hex.EncodeToString(in.sum.Sum(nil)) != pair(m.Pairs, "sha256") {
				fs.fail(ctx, key, in, id, "the file arrived incomplete or altered")
				continue
			}
			delete(fs.in, key)
			if err := in.f.Close(); err != nil {
				_ = os.Remove(in.path)
				fs.reply(ctx, m.From, id, "failed", err.Error())
				continue
			}
			fs.say("* saved %s from %s as %s (%s)", in.name, m.From, in.path, sizeText(in.size))
			fs.reply(ctx, m.From, id, "saved", filepath.Base(in.path))
		case "file-status":
			fs.mu.Lock()
			name, ok := fs.sent[id]
			delete(fs.sent, id)
			fs.mu.Unlock()
			if !ok {
				name = "file " + printable([]byte(id))
			}
			switch st := pair(m.Pairs, "status"); st {
			case "saved":
				fs.say("* %s saved %s as %s", m.From, name, printable([]byte(pair(m.Pairs, "reason"))))
			default:
				fs.say("! %s: %s %s: %s", m.From, name, printable([]byte(st)), printable([]byte(pair(m.Pairs, "reason"))))
			}
		default:
			fs.say("<%s> (%s) %s", m.From, m.Channel, printable(m.Payload))
		}
	}
}

// begin opens a file for an announced transfer, or refuses it.
func (fs *files) begin(ctx context.Context, m *p2p.ReliableMessage, key, id string) {
	name := printable([]byte(pair(m.Pairs, "name")))
	size, err := strconv.ParseInt(pair(m.Pairs, "size"), 10, 64)
	refuse := func(reason string) {
		fs.say("! refused file %s from %s: %s", name, m.From, reason)
		fs.reply(ctx, m.From, id, "refused", reason)
	}
	switch {
	case fs.in[key] != nil:
		return // a repeated id: ignored
	case err != nil || size < 0:
		refuse("no valid size")
		return
	case size > fs.opt.maxSize:
		refuse(fmt.Sprintf("%s is over the limit of %s", sizeText(size), sizeText(fs.opt.maxSize)))
		return
	}
	if len(fs.in) >= maxIncoming {
		fs.dropDeparted()
		fs.dropStalled(time.Now())
	}
	if len(fs.in) >= maxIncoming {
		refuse(fmt.Sprintf("%d files are being received already", maxIncoming))
		return
	}
	f, path, err := createSafe(fs.opt.dir, pair(m.Pairs, "name"))
	if err != nil {
		refuse("cannot save it: " + err.Error())
		return
	}
	fs.in[key] = &incoming{from: m.From, name: name, size: size, f: f, path: path, sum: sha256.New(), last: time.Now()}
	fs.say("* receiving %s (%s) from %s", name, sizeText(size), m.From)
}

// dropDeparted drops the incoming files of senders that left the network.
func (fs *files) dropDeparted() {
	here := map[string]bool{}
	for _, id := range fs.peer.Peers() {
		here[id] = true
	}
	for k, in := range fs.in {
		if !here[in.from] {
			fs.say("! file %s from %s dropped: the sender left", in.name, in.from)
			fs.abandon(k, in)
		}
	}
}

// dropStalled drops the incoming files that got no data for fileStall
// before now.
func (fs *files) dropStalled(now time.Time) {
	for k, in := range fs.in {
		if now.Sub(in.last) >= fileStall {
			fs.say("! file %s from %s dropped: no data for %s", in.name, in.from, fileStall)
			fs.abandon(k, in)
		}
	}
}

// fail drops an incoming file and tells its sender.
func (fs *files) fail(ctx context.Context, key string, in *incoming, id, reason string) {
	fs.abandon(key, in)
	fs.say("! file %s from %s dropped: %s", in.name, in.from, reason)
	fs.reply(ctx, in.from, id, "failed", reason)
}

// abandon removes an incomplete file.
func (fs *files) abandon(key string, in *incoming) {
	delete(fs.in, key)
	_ = in.f.Close()
	_ = os.Remove(in.path)
}

// reply sends a file-status to the sender, on its own goroutine: the
// receive loop must not wait for a send queue.
func (fs *files) reply(ctx context.Context, to, id, status, reason string) {
	env := p2p.Envelope{Header: "file-status", Pairs: []p2p.Pair{{Key: "id", Value: id}, {Key: "reason", Value: truncate(reason, 1024)}, {Key: "status", Value: status}}}
	fs.wg.Go(func() { _ = fs.peer.SendReliable(ctx, to, p2p.Ch1, env) })
}

// wait waits for the senders.
func (fs *files) wait() { fs.wg.Wait() }

// createSafe creates a new file in dir for a sent name: the name's last
// element, with every byte outside A-Z a-z 0-9 . _ - replaced, no
// leading dot or dash, at most maxSafeName bytes; " (n)" before the extension
// when the name is taken. It never overwrites, and os.Root keeps it in
// dir (no "..", no symbolic link out).
func createSafe(dir, sent string) (*os.File, string, error) {
	name := safeName(sent)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for n := 0; n < 1000; n++ {
		try := name
		if n > 0 {
			try = fmt.Sprintf("%s (%d)%s", stem, n, ext)
		}
		f, err := root.OpenFile(try, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		return f, filepath.Join(dir, try), nil
	}
	return nil, "", errors.New("too many files of that name")
}

// safeName turns a sent file name into one safe to create.
func safeName(sent string) string {
	sent = sent[strings.LastIndexAny(sent, `/\`)+1:]
	b := []byte(sent)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	// No leading dot (a hidden file) or dash (read as an option by a
	// command given the directory's names, as in rm *).
	name := strings.TrimLeft(string(b), ".-")
	if len(name) > maxSafeName {
		ext := filepath.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		name = name[:maxSafeName-len(ext)] + ext
	}
	if name == "" {
		name = "file"
	}
	return name
}

// pair returns the value of key in pairs, "" when absent.
func pair(pairs []p2p.Pair, key string) string {
	for _, p := range pairs {
		if p.Key == key {
			return p.Value
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// sizeText prints a byte count: 512 B, 2.0 KiB, 3.5 MiB, 1.2 GiB.
func sizeText(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
