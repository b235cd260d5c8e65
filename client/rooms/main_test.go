package rooms

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboardgg/switchboard/internal/kcploop"
)

func TestMain(m *testing.M) {
	// kcp-go starts its idle scheduler goroutines when imported.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(kcploop.KCPSchedulerGoroutine))
}
