package sim_test

import (
	"fmt"

	"github.com/changerate/changerate/internal/sim"
)

// A crawler visiting daily a page that changes every 2 days on average.
func ExampleObserve() {
	const day = 86400.0
	rng := sim.NewRand(1, 0)
	events := sim.Poisson{Rate: 0.5 / day}.Events(rng, 100*day, nil)
	visits := sim.Regular{Interval: day}.Times(nil, 10*day, 100*day, nil)
	obs := sim.Observe(events, visits, true, nil)
	changed := 0
	for _, v := range obs[1:] {
		if v.Changed {
			changed++
		}
	}
	fmt.Println(len(obs)-1, "intervals; changed in", changed > 20 && changed < 60)
	// Output: 90 intervals; changed in true
}
