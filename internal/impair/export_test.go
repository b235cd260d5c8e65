package impair

// ConfigOf returns p's configuration with its defaults filled in.
func ConfigOf(p *Proxy) Config { return p.cfg }
