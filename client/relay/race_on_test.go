//go:build race

package relay_test

// raceEnabled: the race detector changes some allocation counts.
const raceEnabled = true
