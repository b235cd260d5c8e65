package faultproxy

// EffectiveConfig returns p's config after defaults were filled.
func EffectiveConfig(p *Proxy) Config { return p.cfg }
