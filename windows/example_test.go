package windows_test

import (
	"fmt"

	"github.com/changerate/changerate/windows"
)

// A page changes every 10 minutes for 50 changes, then every 2 minutes: the
// window is closed at the change point and a shift is reported.
func Example() {
	cfg := windows.DefaultConfig()
	var s windows.Segmenter
	t := 1.7e9
	s.Event(t, &cfg) // the first update point is the origin t(0)
	for i := 0; i < 100; i++ {
		gap := 600.0
		if i >= 50 {
			gap = 120
		}
		t += gap
		if sh, ok := s.Event(t, &cfg); ok {
			fmt.Printf("shift %s: %.2f -> %.2f changes/h, p=%.1g, new window starts %.0f s after t(0)\n",
				sh.Test, sh.RateBefore*3600, sh.RateAfter*3600, sh.PValue, sh.After.Start-1.7e9)
		}
	}
	sum := s.Current(t, &cfg)
	fmt.Printf("window %s, %d points, %s rate %.1f changes/h, next update in %.0f s\n",
		sum.State, sum.Points, sum.Model, sum.Rate*3600, sum.NextUpdate-t)
	// Output:
	// shift cusum-binomial-up: 6.00 -> 30.00 changes/h, p=4e-11, new window starts 30000 s after t(0)
	// window constant, 50 points, intuitive rate 30.0 changes/h, next update in 120 s
}
