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

// OnWheel counts the conversations on the wheel (not idle).
func OnWheel(l *Loop) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.slots {
		for ; c != nil; c = c.next {
			n++
		}
	}
	return n
}
