package rooms

// EffectiveConfig returns the configuration New settled on.
func (e *Engine) EffectiveConfig() Config { return e.cfg }

// Locked reports whether someone holds the room's lock.
func (r *Room) Locked() bool {
	if r.mu.TryLock() {
		r.mu.Unlock()
		return false
	}
	return true
}

// YieldEvery is how many rooms a scheduler worker ticks before it yields.
const YieldEvery = yieldEvery
