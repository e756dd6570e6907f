package sim

import (
	"crypto/sha1"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/changerate/changerate/records"
)

// HistoryClass says how a simulated object is observed by History.
type HistoryClass int

// History classes.
const (
	// HistoryCrawl: a crawler visits every 1–12 h (uniform, fixed per
	// object) and records a content digest.
	HistoryCrawl HistoryClass = iota
	// HistoryProxy: a caching proxy sees Poisson accesses (mean interval
	// log-uniform in 10 min – 1 day) and Poisson revalidations (mean 6 h)
	// that report whether the object changed since the previous one.
	HistoryProxy
	// HistoryMixed: both.
	HistoryMixed
)

// String is "crawl", "proxy" or "mixed".
func (c HistoryClass) String() string {
	switch c {
	case HistoryCrawl:
		return "crawl"
	case HistoryProxy:
		return "proxy"
	case HistoryMixed:
		return "mixed"
	}
	return "class" + strconv.Itoa(int(c))
}

// History generates the observations of one object over days days from
// start, in time order, and calls emit for each (the record is reused
// between calls). The content changes as a Poisson process whose mean
// interval is log-uniform in 1 min – 1 week. Observations carry Source
// and Offset as ingest sets them. It returns the number of observations.
// This is the long-history workload of the state-size budget:
// objects observed for weeks, the largest states the aggregator keeps.
func History(rng *rand.Rand, class HistoryClass, name string, start time.Time, days float64, emit func(*records.Observation)) int {
	span := days * 86400
	changeMean := 60 * math.Exp(rng.Float64()*math.Log(7*24*60))
	nextChange, version := rng.ExpFloat64()*changeMean, 0
	visitEvery := 3600 * (1 + 11*rng.Float64())
	accessMean := 600 * math.Exp(rng.Float64()*math.Log(144))
	tv, ta, tr := rng.Float64()*visitEvery, rng.ExpFloat64()*accessMean, rng.ExpFloat64()*6*3600
	seen := -1
	var off int64
	n := 0
	var obs records.Observation
	for {
		t := math.Inf(1)
		kind := records.Kind("")
		if class != HistoryProxy && tv < t {
			t, kind = tv, records.KindVisit
		}
		if class != HistoryCrawl && ta < t {
			t, kind = ta, records.KindAccess
		}
		if class != HistoryCrawl && tr < t {
			t, kind = tr, records.KindRevalidation
		}
		if t >= span {
			return n
		}
		for nextChange <= t {
			version++
			nextChange += rng.ExpFloat64() * changeMean
		}
		off += 200
		obs = records.Observation{Object: name, Time: start.Add(time.Duration(t * 1e9)), Kind: kind,
			Source: "/var/log/x.log@1", Offset: off}
		switch kind {
		case records.KindVisit:
			obs.Digest, obs.Status = contentDigest(name, version), 200
			tv += visitEvery
		case records.KindAccess:
			obs.Status = 200
			ta += rng.ExpFloat64() * accessMean
		case records.KindRevalidation:
			obs.Changed, obs.Status = records.Changed, 200
			if seen == version {
				obs.Changed, obs.Status = records.Unchanged, 304
			}
			seen = version
			tr += rng.ExpFloat64() * 6 * 3600
		}
		emit(&obs)
		n++
	}
}

// contentDigest is the SHA-1 digest of a version of an object's content.
func contentDigest(name string, version int) string {
	h := sha1.Sum([]byte(name + "#" + strconv.Itoa(version)))
	return "sha1:" + hex.EncodeToString(h[:])
}
