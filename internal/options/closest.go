package options

import "strings"

// Closest returns the known variable (an option of either command, with
// the prefix) nearest to name, an unknown CHANGERATE_ variable, and
// whether it is near enough to be taken for a misspelling of it: at most
// two edits (an insertion, a deletion, a substitution or two neighbours
// swapped each count one) and at most one edit per three characters of
// the name, so that CHANGERATE_KAFKA_BROKER is CHANGERATE_KAFKA_BROKERS
// misspelt while CHANGERATE_ON is not CHANGERATE_IN.
func Closest(name string) (string, bool) {
	opt, ok := strings.CutPrefix(name, Prefix+"_")
	if !ok {
		return "", false
	}
	best, bestD := "", -1
	for _, cmd := range commands { // a fixed order: ties go to the aggregator's
		for _, v := range Variables(cmd.name) {
			if d := editDistance(opt, v); bestD < 0 || d < bestD {
				best, bestD = v, d
			}
		}
	}
	if best == "" {
		return "", false
	}
	return Prefix + "_" + best, bestD <= 2 && 3*bestD <= len(opt)
}

// editDistance is the optimal-string-alignment distance between a and b
// (Levenshtein's with the transposition of two neighbours as one edit),
// over bytes: option names are ASCII.
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows suffice.
	prev2, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
