//go:build !race

package kcploop_test

const raceEnabled = false
