package main

import (
	"crypto/sha1"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/changerate/changerate/records"
)

// Object classes of the workload.
const (
	classCrawl = iota // a crawler's pages: visits with content digests
	classProxy        // a caching proxy's objects: accesses and revalidations
	classMixed        // both: proxied objects that a crawler also visits
	numClasses
)

var classNames = [numClasses]string{"crawl", "proxy", "mixed"}

// wobject is one simulated object.
type wobject struct {
	name, site string
	class      int
	changeRate float64 // true Poisson change rate, per second
	version    int     // content version at lastT
	nextChange float64 // seconds since the workload start
	seenVer    int     // version at the previous revalidation (-1: none)
}

// workloadConfig describes a seeded synthetic workload.
type workloadConfig struct {
	Seed         uint64
	Objects      int
	Observations int
	Start        time.Time
	Span         time.Duration // event time covered by the observations
	Zipf         float64       // popularity exponent
}

// workload generates observations in time order (a merged log of a proxy
// and a crawler): objects drawn by Zipf popularity; crawl-like objects get
// visits with digests, proxy-like ones accesses (85%) and revalidations,
// mixed ones accesses (70%), revalidations (10%) and crawler visits (20%).
// Content changes as a Poisson process per object (mean interval
// log-uniform between 1 minute and 1 week).
type workload struct {
	cfg     workloadConfig
	r       *rand.Rand
	objs    []wobject
	cum     []float64 // cumulative popularity
	offsets [2]int64  // byte offsets of the two sources
}

func newWorkload(cfg workloadConfig) *workload {
	r := rand.New(rand.NewPCG(cfg.Seed, 0x6265))
	w := &workload{cfg: cfg, r: r, objs: make([]wobject, cfg.Objects), cum: make([]float64, cfg.Objects)}
	for i := range w.objs {
		o := &w.objs[i]
		switch i % 5 {
		case 0, 1:
			o.class = classCrawl
			o.site = fmt.Sprintf("news%d.example.org", i%97)
			o.name = fmt.Sprintf("https://%s/section-%d/2026/11/article-%07d.html", o.site, i%13, i)
		case 2, 3:
			o.class = classProxy
			o.site = fmt.Sprintf("cdn%d.example.com", i%89)
			o.name = fmt.Sprintf("http://%s/static/img/%07d/large.jpg?v=3", o.site, i)
		default:
			o.class = classMixed
			o.site = fmt.Sprintf("shop%d.example.net", i%83)
			o.name = fmt.Sprintf("https://%s/products/item-%07d", o.site, i)
		}
		mean := 60 * math.Exp(r.Float64()*math.Log(7*24*60))
		o.changeRate = 1 / mean
		o.nextChange = r.ExpFloat64() * mean
		o.seenVer = -1
	}
	// Popularity: Zipf over a random permutation of the objects.
	perm := r.Perm(cfg.Objects)
	var sum float64
	for i, rank := range perm {
		sum += math.Pow(float64(rank+1), -cfg.Zipf)
		w.cum[i] = sum
	}
	return w
}

func (w *workload) pick() *wobject {
	x := w.r.Float64() * w.cum[len(w.cum)-1]
	return &w.objs[sort.SearchFloat64s(w.cum, x)]
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

func digest(name string, version int) string {
	h := sha1.New()
	h.Write([]byte(name))
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(version))
	h.Write(b[:])
	return "sha1:" + b32.EncodeToString(h.Sum(nil))
}

// next returns the next observation at event time t (seconds since Start);
// it advances the object's content.
func (w *workload) next(t float64, at time.Time) records.Observation {
	o := w.pick()
	for o.nextChange <= t {
		o.version++
		o.nextChange += w.r.ExpFloat64() / o.changeRate
	}
	obs := records.Observation{Object: o.name, Site: o.site, Time: at}
	u := w.r.Float64()
	kind := records.KindAccess
	switch o.class {
	case classCrawl:
		kind = records.KindVisit
	case classProxy:
		if u < 0.15 {
			kind = records.KindRevalidation
		}
	default:
		switch {
		case u < 0.2:
			kind = records.KindVisit
		case u < 0.3:
			kind = records.KindRevalidation
		}
	}
	obs.Kind = kind
	switch kind {
	case records.KindVisit:
		obs.Digest, obs.Status, obs.Format = digest(o.name, o.version), 200, "heritrix"
		obs.Source = "/data/crawl/crawl.log@2231"
		w.offsets[0] += 180 + int64(len(o.name))
		obs.Offset = w.offsets[0]
	case records.KindRevalidation:
		if o.seenVer >= 0 && o.seenVer == o.version {
			obs.Changed, obs.Status = records.Unchanged, 304
		} else {
			obs.Changed, obs.Status = records.Changed, 200
		}
		o.seenVer = o.version
		fallthrough
	default:
		if obs.Status == 0 {
			obs.Status = 200
		}
		obs.Format = "squid"
		obs.Source = "/var/log/squid/access.log@918"
		w.offsets[1] += 120 + int64(len(o.name))
		obs.Offset = w.offsets[1]
	}
	return obs
}

// message is one encoded observation with its key.
type message struct {
	key, value []byte
}

// generate returns the whole workload encoded as JSON, in event-time order.
func (w *workload) generate() []message {
	n := w.cfg.Observations
	out := make([]message, n)
	span := w.cfg.Span.Seconds()
	var slab []byte
	for i := 0; i < n; i++ {
		t := span * float64(i) / float64(n)
		at := w.cfg.Start.Add(time.Duration(t * 1e9))
		obs := w.next(t, at)
		if cap(slab)-len(slab) < 1024 {
			slab = make([]byte, 0, 1<<20)
		}
		start := len(slab)
		slab = appendJSON(slab, &obs)
		if i < 1000 {
			checkJSON(&obs)
		}
		v := slab[start:len(slab):len(slab)]
		out[i] = message{key: []byte(obs.Object), value: v}
	}
	return out
}

// appendJSON appends the observation's JSON encoding, the bytes
// json.Marshal (and ingest's encoder) writes for the workload's
// observations: plain ASCII strings without characters to escape, no
// snapshot fields.
func appendJSON(dst []byte, o *records.Observation) []byte {
	str := func(k, v string) {
		dst = append(dst, `,"`...)
		dst = append(dst, k...)
		dst = append(dst, `":"`...)
		dst = append(dst, v...)
		dst = append(dst, '"')
	}
	dst = append(dst, `{"object":"`...)
	dst = append(dst, o.Object...)
	dst = append(dst, '"')
	if o.Site != "" {
		str("site", o.Site)
	}
	dst = append(dst, `,"time":"`...)
	dst = o.Time.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, '"')
	str("kind", string(o.Kind))
	switch o.Changed {
	case records.Changed:
		dst = append(dst, `,"changed":true`...)
	case records.Unchanged:
		dst = append(dst, `,"changed":false`...)
	}
	if o.Digest != "" {
		str("digest", o.Digest)
	}
	if o.Status != 0 {
		dst = append(dst, `,"status":`...)
		dst = strconv.AppendInt(dst, int64(o.Status), 10)
	}
	if o.Format != "" {
		str("format", o.Format)
	}
	if o.Source != "" {
		str("source", o.Source)
	}
	if o.Offset != 0 {
		dst = append(dst, `,"offset":`...)
		dst = strconv.AppendInt(dst, o.Offset, 10)
	}
	return append(dst, '}')
}

// checkJSON panics unless appendJSON agrees with json.Marshal on o.
func checkJSON(o *records.Observation) {
	want, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	if got := appendJSON(nil, o); string(got) != string(want) {
		panic(fmt.Sprintf("workload encoding %s differs from json.Marshal %s", got, want))
	}
}

// classOf returns the class of object name (by its URL scheme of naming).
func (w *workload) classes() map[string]int {
	m := make(map[string]int, len(w.objs))
	for _, o := range w.objs {
		m[o.name] = o.class
	}
	return m
}
