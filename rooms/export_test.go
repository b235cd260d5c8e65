package rooms

// EffectiveConfig returns the configuration New settled on.
func (e *Engine) EffectiveConfig() Config { return e.cfg }
