package kcploop

import (
	_ "unsafe" // go:linkname

	kcp "github.com/xtaci/kcp-go/v5"
)

// kcpFlush is kcp-go's (*KCP).flush: it sends the pending
// acknowledgements and, with kcp.IKCP_FLUSH_FULL, the queued segments the
// windows allow and the retransmissions that are due, at once. kcp-go
// calls it itself from Input (when acknowledgements slide the window) and
// from Update (at most once per interval), but exports neither it nor a
// way to move Update's next flush; without it a message given to Send
// would wait up to the interval (10 ms in no-delay mode) before leaving.
// The pinned kcp-go version (go.mod) has this method with this
// signature; TestFlushSendsAtOnce fails if a new version changes it in a
// way that still links.
//
//go:linkname kcpFlush github.com/xtaci/kcp-go/v5.(*KCP).flush
func kcpFlush(k *kcp.KCP, t kcp.FlushType) uint32
