package ntoulas_test

import (
	"fmt"

	"github.com/changerate/changerate/research/ntoulas"
)

// Fig. 1 of Cho & Ntoulas: two sites of 100 pages, 70 and 20 changed,
// 100 downloads per cycle.
func ExampleTwoSites_Expected() {
	ts := ntoulas.TwoSites{Pages: 100, ChangedA: 70, ChangedB: 20, Budget: 100}
	for _, s := range []int{0, 5, 50} {
		rr, g, p, _ := ts.Expected(s)
		fmt.Printf("s=%d round-robin %.3f greedy %.3f proportional %.3f\n", s, rr, g, p)
	}
	// Output:
	// s=0 round-robin 0.450 greedy 0.450 proportional 0.450
	// s=5 round-robin 0.450 greedy 0.654 proportional 0.582
	// s=50 round-robin 0.450 greedy 0.450 proportional 0.450
}
