package plan

import "testing"

// Cho & Ntoulas, §3.4 Example 2.
func TestApportionExample2(t *testing.T) {
	// Example 2: 80 remaining downloads, 7 and 2 changed samples → 62 / 18.
	got := Apportion(80, []float64{7, 2}, func(int) int { return 90 })
	if got[0] != 62 || got[1] != 18 {
		t.Errorf("Apportion = %v, want [62 18]", got)
	}
	// caps move the excess
	got = Apportion(100, []float64{9, 1}, func(i int) int { return []int{50, 90}[i] })
	if got[0] != 50 || got[1] != 50 {
		t.Errorf("capped Apportion = %v, want [50 50]", got)
	}
}
