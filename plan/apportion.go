package plan

import (
	"math"
	"sort"
)

// Apportion splits total into integers ∝ weight, each at most capOf(i):
// capped shares are fixed and the rest re-split; fractional parts are
// rounded by largest remainder. The sum is min(total, Σ caps over positive
// weights).
func Apportion(total int, weight []float64, capOf func(int) int) []int {
	m := len(weight)
	alloc := make([]int, m)
	active := make([]bool, m)
	for i, wt := range weight {
		active[i] = wt > 0 && capOf(i) > 0
	}
	left := total
	for left > 0 {
		sum := 0.0
		for i := range weight {
			if active[i] {
				sum += weight[i]
			}
		}
		if sum == 0 {
			break
		}
		capped := false
		for i := range weight {
			if active[i] && float64(left)*weight[i]/sum >= float64(capOf(i)-alloc[i]) {
				left -= capOf(i) - alloc[i]
				alloc[i] = capOf(i)
				active[i] = false
				capped = true
			}
		}
		if capped {
			continue
		}
		type rem struct {
			i int
			f float64
		}
		var rems []rem
		given := 0
		for i := range weight {
			if active[i] {
				share := float64(left) * weight[i] / sum
				fl := int(math.Floor(share))
				alloc[i] += fl
				given += fl
				rems = append(rems, rem{i, share - float64(fl)})
			}
		}
		sort.SliceStable(rems, func(a, b int) bool { return rems[a].f > rems[b].f })
		for k := 0; given < left && k < len(rems); k++ {
			alloc[rems[k].i]++
			given++
		}
		left = 0
	}
	return alloc
}
