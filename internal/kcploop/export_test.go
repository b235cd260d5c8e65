package kcploop

// Flush runs c's KCP Update at once, as the wheel would when c is due,
// so that a test can drive a conversation without Run.
func Flush(c *Conv) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kcp.Update()
}

// Tick runs one step of the wheel at once, as Run does on each tick.
func Tick(l *Loop) { l.step() }
