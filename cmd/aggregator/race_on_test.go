//go:build race

package main

// raceEnabled: the race detector slows the pipeline about tenfold; the
// tests with the real files then use their first lines only (see
// realSample), to keep CI within its budget.
const raceEnabled = true
