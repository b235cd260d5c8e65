package node

// EffectiveConfig returns the configuration New settled on, defaults
// filled in.
func (s *Server) EffectiveConfig() Config { return s.cfg }

// InvalidLimit is the number of invalid messages in a row that close a
// connection.
const InvalidLimit = invalidLimit

// SetUpgradeHook makes every connection call f after its upgrade (101
// sent) and before the server registers it.
func (s *Server) SetUpgradeHook(f func()) { s.upgradeHook.Store(&f) }
