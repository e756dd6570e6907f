package options

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"abc", "abc", 0},
		{"KAFKA_BROKER", "KAFKA_BROKERS", 1}, // insertion
		{"REDIS_ADRS", "REDIS_ADDRS", 1},     // insertion inside
		{"REDSI_ADDRS", "REDIS_ADDRS", 1},    // neighbours swapped
		{"REDIS_ADDRZ", "REDIS_ADDRS", 1},    // substitution
		{"kitten", "sitting", 3},             // Levenshtein's textbook pair
		{"CA", "ABC", 3},                     // OSA (not Damerau): no edit of a swapped pair
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := editDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		near       bool
	}{
		{"CHANGERATE_KAFKA_BROKER", "CHANGERATE_KAFKA_BROKERS", true},
		{"CHANGERATE_REDIS_ADDR", "CHANGERATE_REDIS_ADDRS", true},
		{"CHANGERATE_REDSI_ADDRS", "CHANGERATE_REDIS_ADDRS", true},
		{"CHANGERATE_DEMO_PAGE", "CHANGERATE_DEMO_PAGES", true},
		{"CHANGERATE_ON", "", false},                   // one edit of IN, but a two-letter name
		{"CHANGERATE_NO_SUCH_THING_AT_ALL", "", false}, // far from every option
		{"OTHER_KAFKA_BROKER", "", false},              // not ours
	} {
		got, near := Closest(tc.name)
		if near != tc.near || near && got != tc.want {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", tc.name, got, near, tc.want, tc.near)
		}
	}
}
