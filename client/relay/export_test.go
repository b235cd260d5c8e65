package relay

// SetUDPAddr makes the Conns of cfg send to addr instead of the UDP
// endpoint the API gave (a proxy in front of the relay node).
func SetUDPAddr(cfg *Config, addr string) { cfg.udpAddr = addr }

// DisablePeerEvents makes hosts of cfg not subscribe to peer events, as
// with a relay node without them.
func DisablePeerEvents(cfg *Config) { cfg.noPeerEvents = true }

// AddPeer puts id in c's peer set, as if it had connected (to make the
// relay node answer a RELAY to a stranger with ERROR 5).
func AddPeer(c *Conn, id AllocationID) { c.addPeer(id) }

// SetWSAddr makes the Conns of cfg dial addr (host:port) instead of the
// WebSocket endpoint the API gave (a TCP proxy in front of the relay).
func SetWSAddr(cfg *Config, addr string) { cfg.wsAddr = addr }
