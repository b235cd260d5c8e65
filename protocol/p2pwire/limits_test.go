package p2pwire_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/switchboardgg/switchboard/protocol/p2pwire"
)

// TestLimitsDocumented pins every limit to its value and checks that
// docs/protocol/p2p.md states it, so that changing one means changing the
// page implementers read.
func TestLimitsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/protocol/p2p.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(doc)
	limits := []struct {
		name     string
		got, doc int
	}{
		{"MinFrameSize", p2pwire.MinFrameSize, 2},
		{"DefaultMaxFrameSize", p2pwire.DefaultMaxFrameSize, 1 << 20},
		{"MaxFrameSize", p2pwire.MaxFrameSize, 16_777_216},
		{"MinAnnouncedFrameSize", p2pwire.MinAnnouncedFrameSize, 4096},
		{"MaxPeerIDLen", p2pwire.MaxPeerIDLen, 96},
		{"MaxNetworkLen", p2pwire.MaxNetworkLen, 64},
		{"MaxTicketLen", p2pwire.MaxTicketLen, 2048},
		{"MaxResumeTokenLen", p2pwire.MaxResumeTokenLen, 64},
		{"MaxHeaderLen", p2pwire.MaxHeaderLen, 1024},
		{"MaxPairs", p2pwire.MaxPairs, 32},
		{"MaxKeyLen", p2pwire.MaxKeyLen, 64},
		{"MaxValueLen", p2pwire.MaxValueLen, 1024},
		{"MaxReasonLen", p2pwire.MaxReasonLen, 256},
		{"MaxPeersInSet", p2pwire.MaxPeersInSet, 4096},
		{"MaxCandidates", p2pwire.MaxCandidates, 16},
		{"UDPSecretSize", p2pwire.UDPSecretSize, 32},
		{"SealedHeaderSize", p2pwire.SealedHeaderSize, 13},
		{"TagSize", p2pwire.TagSize, 16},
		{"MaxDatagramSize", p2pwire.MaxDatagramSize, 1232},
		{"MaxOpenedSize", p2pwire.MaxOpenedSize, 1203},
		{"MaxRoutedRest", p2pwire.MaxRoutedRest, 1104},
		{"MaxJumboSize", p2pwire.MaxJumboSize, 16_256_000},
		{"JumboChunkSize", p2pwire.JumboChunkSize, 1024},
		{"MaxJumboChunks", p2pwire.MaxJumboChunks, 15875},
	}
	for _, l := range limits {
		if l.got != l.doc {
			t.Errorf("%s = %d; the page says %d", l.name, l.got, l.doc)
		}
		if l.doc == 1<<20 {
			continue // written "1 MiB"
		}
		if s := commas(l.doc); !strings.Contains(page, s) {
			t.Errorf("%s: the page does not mention %s", l.name, s)
		}
	}
	if p2pwire.SealedMarker != 0xE1 || !strings.Contains(page, "0xE1") {
		t.Error("sealed marker")
	}
}

// commas writes n as the page does: 1,232.
func commas(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
