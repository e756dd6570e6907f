//go:build race

package aggregate

// raceEnabled: the race detector slows the simulation tests about tenfold;
// they run a smaller population under it.
const raceEnabled = true
