package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestLiveBudget checks the budget table's arithmetic: the budget is cores
// ÷ 300,000 per second, the held-back runs' total is compared with it on
// either side, and the difference row is live minus held back (medians).
func TestLiveBudget(t *testing.T) {
	live := []liveResult{
		{Rate: 100_000, KcatRate: 400_000, AggCPU: 8, BrokerCPU: 2, RedisCPU: 3},
		{Rate: 120_000, KcatRate: 400_000, AggCPU: 6, BrokerCPU: 1, RedisCPU: 2},
		{Rate: 110_000, KcatRate: 400_000, AggCPU: 7, BrokerCPU: 1.5, RedisCPU: 2.5},
	}
	for _, c := range []struct {
		cpus int
		held []liveResult
		want []string
	}{
		{2, []liveResult{{Rate: 200_000, KcatRate: 400_000, AggCPU: 4, BrokerCPU: 0.5, RedisCPU: 2}},
			[]string{"may spend **6.67 µs**", "| every observation publishes (3) | 110000 | 0.28 | 7.00 | 1.50 | 2.50 | 11.00 | 1.65× |",
				"| estimates held back (1) | 200000 | 0.50 | 4.00 | 0.50 | 2.00 | 6.50 | 0.97× |",
				"| difference: the per-observation estimates | | | 3.00 | 1.00 | 0.50 | 4.50 | |", "which fits within the budget of 6.67 µs", "spends 2.00 µs,\n30 % of the budget"}},
		{1, []liveResult{{Rate: 200_000, KcatRate: 400_000, AggCPU: 4, BrokerCPU: 0.5, RedisCPU: 2}},
			[]string{"this machine's 1 cores", "may spend **3.33 µs**", "which is 1.95× the budget of 3.33 µs"}},
	} {
		var b strings.Builder
		writeLiveBudget(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, live, c.held, c.cpus)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%d cores: missing %q in\n%s", c.cpus, w, b.String())
			}
		}
	}
}
