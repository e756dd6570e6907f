package aggregate

import (
	"time"

	"github.com/changerate/changerate/records"
)

// recordStore is the storage of one estimate record that is encoded right
// away and then dropped (the processor's published estimates): its maps
// are cleared and reused and its pointer fields point into the store, so
// building a record does not allocate (issue 13: allocation and garbage
// collection were a third of the aggregator's CPU when every observation
// publishes). A record built on a store is valid until the store's next
// use. A nil *recordStore allocates, for records handed to callers.
type recordStore struct {
	floats    [8]float64
	nf        int
	times     [2]time.Time
	nt        int
	pairs     [1][2]float64
	np        int
	win       records.Window
	estimates map[string]float64
	intervals map[string][2]float64
}

func (s *recordStore) reset() {
	if s != nil {
		s.nf, s.nt, s.np = 0, 0, 0
	}
}

func (s *recordStore) float(v float64) *float64 {
	if s == nil || s.nf == len(s.floats) {
		return &v
	}
	p := &s.floats[s.nf]
	*p = v
	s.nf++
	return p
}

func (s *recordStore) time(v time.Time) *time.Time {
	if s == nil || s.nt == len(s.times) {
		return &v
	}
	p := &s.times[s.nt]
	*p = v
	s.nt++
	return p
}

func (s *recordStore) pair(a, b float64) *[2]float64 {
	if s == nil || s.np == len(s.pairs) {
		return &[2]float64{a, b}
	}
	p := &s.pairs[s.np]
	*p = [2]float64{a, b}
	s.np++
	return p
}

func (s *recordStore) window() *records.Window {
	if s == nil {
		return new(records.Window)
	}
	return &s.win
}

func (s *recordStore) estimatesMap(n int) map[string]float64 {
	if s == nil {
		return make(map[string]float64, n)
	}
	if s.estimates == nil {
		s.estimates = make(map[string]float64, n)
	}
	clear(s.estimates)
	return s.estimates
}

func (s *recordStore) intervalsMap(n int) map[string][2]float64 {
	if s == nil {
		return make(map[string][2]float64, n)
	}
	if s.intervals == nil {
		s.intervals = make(map[string][2]float64, n)
	}
	clear(s.intervals)
	return s.intervals
}
