package windows_test

import (
	"fmt"
	"time"

	"github.com/changerate/changerate/windows"
)

// A site busy from 08:00 to 20:00 UTC: one point a minute by day, one every
// ten minutes by night. After the 7-day learning period its profile is
// active, and an hour of operational time Λ passes faster by day than by
// night (the hour's expected share of a week's points). The true factors
// are 60/33 = 1.82 and 6/33 = 0.18; the prior pseudo-count (PriorEvents)
// pulls the night factor up a little.
func ExampleProfile() {
	cfg := windows.DefaultSeasonalConfig()
	var p windows.Profile
	start := time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC) // a Monday
	for t := start; t.Before(start.AddDate(0, 0, 8)); {
		x := float64(t.Unix())
		p.Operational(x, &cfg)
		p.Observe(x, &cfg)
		if h := t.Hour(); h >= 8 && h < 20 {
			t = t.Add(time.Minute)
		} else {
			t = t.Add(10 * time.Minute)
		}
	}
	hour, _ := p.Factors()
	noon := float64(start.AddDate(0, 0, 8).Add(12 * time.Hour).Unix())
	night := float64(start.AddDate(0, 0, 8).Add(2 * time.Hour).Unix())
	fmt.Println("active:", p.Active())
	fmt.Printf("factor at 12h %.2f, at 02h %.2f\n", hour[12], hour[2])
	fmt.Printf("Λ over one hour: at noon %.0f s, at night %.0f s\n", p.At(noon+3600)-p.At(noon), p.At(night+3600)-p.At(night))
	// Output:
	// active: true
	// factor at 12h 1.79, at 02h 0.21
	// Λ over one hour: at noon 6457 s, at night 743 s
}
