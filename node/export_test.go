package node

import (
	"github.com/switchboardgg/switchboard/rooms"
	"github.com/switchboardgg/switchboard/store"
)

// Commands returns the handler of the commands from control that Serve
// subscribes (store.ServeCommands) when Config.Backbone is set.
func (s *Server) Commands() store.CommandHandler { return commands{s} }

// Engine returns the node's room engine.
func (s *Server) Engine() *rooms.Engine { return s.engine }

// EffectiveConfig returns the configuration New settled on, defaults
// filled in.
func (s *Server) EffectiveConfig() Config { return s.cfg }

// InvalidLimit is the number of invalid messages in a row that close a
// connection.
const InvalidLimit = invalidLimit

// SetUpgradeHook makes every connection call f after its upgrade (101
// sent) and before the server registers it.
func (s *Server) SetUpgradeHook(f func()) { s.upgradeHook.Store(&f) }

// ReadBudgets returns the bytes each connection may still read at once.
func (s *Server) ReadBudgets() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b []float64
	for c := range s.conns {
		b = append(b, c.lim.Tokens())
	}
	return b
}

// PongBurst and PongsPerSecond bound the answers to WebSocket pings.
const (
	PongBurst      = pongBurst
	PongsPerSecond = pongsPerSecond
)
