package aggregate

import (
	"slices"
	"time"

	"github.com/changerate/changerate/records"
)

// recordStore is the storage of one estimate record that is encoded right
// away and then dropped (the processor's published estimates): its
// pointer fields point into the store, and its estimators' rates and
// intervals are kept in the store's keyed list (sorted by key, encoded by
// records.AppendEstimateJSONKeyed) instead of the record's maps, so
// building a record neither allocates nor hashes (issue 13: allocation and
// garbage collection were a third of the aggregator's CPU when every
// observation publishes; filling, clearing and sorting the two maps took
// about 7 % of BenchmarkProcessorLive's CPU). A record built on a store is valid until
// the store's next use. A nil *recordStore allocates and fills the
// record's maps, for records handed to callers.
type recordStore struct {
	floats [12]float64
	nf     int
	times  [2]time.Time
	nt     int
	pairs  [3][2]float64
	np     int
	win    records.Window
	keyed  []records.Keyed
}

func (s *recordStore) reset() {
	if s != nil {
		s.nf, s.nt, s.np = 0, 0, 0
		s.keyed = s.keyed[:0]
	}
}

// (The helpers below allocate with new, not by returning &v, which would
// move v to the heap at every call, stored or not.)

func (s *recordStore) float(v float64) *float64 {
	if s == nil || s.nf == len(s.floats) {
		p := new(float64)
		*p = v
		return p
	}
	p := &s.floats[s.nf]
	*p = v
	s.nf++
	return p
}

func (s *recordStore) time(v time.Time) *time.Time {
	if s == nil || s.nt == len(s.times) {
		p := new(time.Time)
		*p = v
		return p
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

// setRate records the rate v of estimator key in rec: in the store's keyed
// list or, without a store, in rec.Estimates.
func (s *recordStore) setRate(rec *records.Estimate, key string, v float64) {
	if s == nil {
		if rec.Estimates == nil {
			rec.Estimates = make(map[string]float64, 8)
		}
		rec.Estimates[key] = v
		return
	}
	k := s.entry(key)
	k.Rate, k.HasRate = v, true
}

// setInterval records the interval [lo, hi] of estimator key in rec: in
// the store's keyed list or, without a store, in rec.Intervals.
func (s *recordStore) setInterval(rec *records.Estimate, key string, lo, hi float64) {
	if s == nil {
		if rec.Intervals == nil {
			rec.Intervals = make(map[string][2]float64, 8)
		}
		rec.Intervals[key] = [2]float64{lo, hi}
		return
	}
	k := s.entry(key)
	k.CI, k.HasCI = [2]float64{lo, hi}, true
}

// entry returns the keyed entry of key, inserted in key order when new (a
// dozen keys at most: a linear search).
func (s *recordStore) entry(key string) *records.Keyed {
	i := 0
	for i < len(s.keyed) && s.keyed[i].Key < key {
		i++
	}
	if i == len(s.keyed) || s.keyed[i].Key != key {
		s.keyed = slices.Insert(s.keyed, i, records.Keyed{Key: key})
	}
	return &s.keyed[i]
}

// withMaps returns a copy of rec, built on s, with the store's keyed list
// in its maps (rec itself when s is nil): the record as the public
// builders return it.
func (s *recordStore) withMaps(rec *records.Estimate) *records.Estimate {
	if s == nil || len(s.keyed) == 0 {
		return rec
	}
	c := *rec
	for _, k := range s.keyed {
		if k.HasRate {
			if c.Estimates == nil {
				c.Estimates = make(map[string]float64, len(s.keyed))
			}
			c.Estimates[k.Key] = k.Rate
		}
		if k.HasCI {
			if c.Intervals == nil {
				c.Intervals = make(map[string][2]float64, len(s.keyed))
			}
			c.Intervals[k.Key] = k.CI
		}
	}
	return &c
}
