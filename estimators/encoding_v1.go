package estimators

import (
	"math"

	"github.com/changerate/changerate/internal/wire"
)

// Version 1 of the state encoding kept times and sums as float64 seconds:
//
//	visits:   uvarint visits, uvarint X; float64 first; if visits > 1:
//	          float64 last, Σ I², Σ t_u, Σ t_c; uvarint #non-empty buckets, then
//	          per bucket uvarint (index − previous index − 1), uvarint count
//	lastmod:  uvarint N, X (Fig. 10), float64 T; uvarint ages, float64 Σ age
//	matloff:  as in version 2
//	direct:   uvarint accesses, float64 first; if accesses ≠ 1: float64 last
//
// States stored by a version-1 build are decoded into the version-2 state:
// times and sums rounded to whole milliseconds (Σ t_u is then derived from
// the span), Σ I² to float32, and the dependence count starts at its
// expectation for independent flags, as for version 2. Nothing writes version 1 any more.

func (c *Change) decodeV1(src []byte) (int, error) {
	d := decoder{r: reader{wire.NewReader(src)}}
	_, flags := d.header(secVisits|secLastMod|secMatloff, 1)
	var s Change
	if flags&secVisits != 0 {
		s.visits = d.r.Count()
		s.changes = d.r.Count()
		first := d.r.Float64()
		last, sumSq, unchanged, changedT := first, 0.0, 0.0, 0.0
		if s.visits != 1 || s.changes != 0 {
			last = d.r.Float64()
			sumSq = d.r.Float64()
			unchanged = d.r.Float64()
			changedT = d.r.Float64()
			nb := d.r.Count()
			if nb > NumBuckets {
				d.r.Fail("too many buckets")
			}
			prev := int64(-1)
			var sum int64
			for i := int64(0); i < nb && d.r.Err() == nil; i++ {
				gap := d.r.Count()
				cnt := d.r.Count()
				b := prev + 1 + gap
				if d.r.Err() != nil {
					break
				}
				if gap > NumBuckets || b >= NumBuckets || cnt == 0 || cnt > math.MaxUint32 {
					d.r.Fail("bad bucket")
					break
				}
				s.buckets[b] = uint32(cnt)
				sum += cnt
				prev = b
			}
			if d.r.Err() == nil {
				switch {
				case s.visits < 1:
					d.r.Fail("intervals without baseline")
				case s.changes > s.visits-1:
					d.r.Fail("more changes than intervals")
				case sum > s.changes:
					d.r.Fail("bucket counts exceed changes")
				case !(last >= first) || !validTime(first) || !validTime(last):
					d.r.Fail("bad visit times")
				case !(sumSq >= 0) || !(unchanged >= 0) || !(changedT >= 0) || sumSq > math.MaxFloat32 || changedT > 2*MaxTime:
					d.r.Fail("bad interval sums")
				case s.visits == 1 && (last != first || sumSq != 0 || unchanged != 0 || changedT != 0):
					d.r.Fail("baseline with interval data")
				}
			}
		} else if d.r.Err() == nil && !validTime(first) {
			d.r.Fail("bad visit time")
		}
		s.first, s.last, s.sumSq = millis(first), millis(last), float32(sumSq)
		s.changedT = min(millis(changedT), s.last-s.first)
	}
	if flags&secLastMod != 0 {
		s.lmN = d.r.Count()
		s.lmX = d.r.Count()
		lmT := d.r.Float64()
		s.ageN = d.r.Count()
		ageSum := d.r.Float64()
		if d.r.Err() == nil {
			switch {
			case s.lmX > s.lmN || s.lmN > s.Intervals() || s.ageN > s.visits:
				d.r.Fail("last-modified counts")
			case !(lmT >= 0) || !(ageSum >= 0) || lmT > 2*MaxTime:
				d.r.Fail("last-modified sums")
			}
		}
		s.lmT = min(millis(lmT), s.last-s.first)
		if ageSum*1000 >= math.MaxInt64 {
			s.ageSum = math.MaxInt64
		} else {
			s.ageSum = millis(ageSum)
		}
	}
	if flags&secMatloff != 0 {
		s.mat.decode(&d)
	}
	if err := d.err(); err != nil {
		return 0, err
	}
	s.importSpacings(false, 1) // no dependence statistics before version 3 (dependence.go)
	*c = s
	return d.r.Offset(), nil
}

func (a *Access) decodeV1(src []byte) (int, error) {
	d := decoder{r: reader{wire.NewReader(src)}}
	_, flags := d.header(secDirect|secMatloff, 1)
	var s Access
	if flags&secDirect != 0 {
		s.n = d.r.Count()
		first := d.r.Float64()
		last := first
		if s.n != 1 {
			last = d.r.Float64()
		}
		if d.r.Err() == nil && (!validTime(first) || !validTime(last) || !(last >= first) || (s.n == 0 && (first != 0 || last != 0))) {
			d.r.Fail("bad access times")
		}
		s.first, s.last = millis(first), millis(last)
	}
	if flags&secMatloff != 0 {
		s.mat.decode(&d)
	}
	if err := d.err(); err != nil {
		return 0, err
	}
	*a = s
	return d.r.Offset(), nil
}
