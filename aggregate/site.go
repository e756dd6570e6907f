package aggregate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
	"github.com/changerate/changerate/windows"
)

// SiteKeyPrefix prefixes the state-store key of a site's seasonal profile
// (one value per site and partition, beside the objects' values). Canonical
// object URLs never start with '#', so the keys cannot collide.
const SiteKeyPrefix = "#site "

// DefaultMaxSites bounds the site profiles a partition keeps in memory.
const DefaultMaxSites = 10000

// siteEntry is one site's profile in a partition.
type siteEntry struct {
	st  SiteState
	seq uint64 // last batch that changed it
	// prior: the entry holds its population's change-rate prior only
	// (PriorOnly): its seasonal profiles are neither learned nor used.
	prior bool
}

// PriorOnly reports whether the objects of host (Site(object); "" for
// objects without a host) keep only their population's change-rate prior
// in their SiteState, without seasonal profiles: objects without a host
// (their population is the partition's hostless objects, stored as the
// site "" under the key SiteKeyPrefix), and every site when seasonal
// baselines are off (siteprior.go). Their estimates read the state's
// Pool alone (PriorView).
func PriorOnly(host string, m *Model) bool { return host == "" || !m.Seasonal.Enabled() }

// PriorView is the site state an estimate of an object of host reads:
// s, or, when PriorOnly, a copy of its prior alone in *view (so that
// stored profiles of another configuration are not used). nil for nil.
func PriorView(host string, m *Model, s, view *SiteState) *SiteState {
	if s == nil || !PriorOnly(host, m) || (!s.Access.Active() && !s.Change.Active()) {
		return s // estimates read only active profiles
	}
	*view = SiteState{Pool: s.Pool, Trend: s.Trend, Flags: s.Flags}
	return view
}

// detector is the per-partition alert logic shared by the Processor and
// the simulation tests: the sites' seasonal profiles and the alert book.
// It is not safe for concurrent use.
type detector struct {
	m      *Model
	totals map[string]int // candidate outcomes over the claim, for the end-of-input summary
	sites  map[string]*siteEntry
	book   *alertBook
	loaded bool // the stored alert book was read (processor)
	out    []records.Alert
}

// Detector is the per-partition alert logic of the Processor — the sites'
// seasonal profiles and the alert book — for tools and tests that compute
// the state a partition's observations lead to (for example an oracle of
// the stored state). It is not safe for concurrent use.
type Detector struct{ d *detector }

// NewDetector returns an empty Detector with the model m.
func NewDetector(m *Model) *Detector { return &Detector{newDetector(m)} }

// Apply applies obs to obj (named name) as the Processor does: with the
// site's seasonal state, holding confirmed shifts for the alert book.
func (x *Detector) Apply(name string, obj *Object, obs *records.Observation, eff *Effects) Outcome {
	oc := x.d.apply(name, x.d.site(Site(name)), obj, obs, eff)
	x.d.out = x.d.out[:0]
	return oc
}

// Site returns the seasonal state of a site (nil if never seen; "": the
// prior of the objects without a host).
func (x *Detector) Site(host string) *SiteState {
	if e := x.d.sites[host]; e != nil {
		return &e.st
	}
	return nil
}

// AlertBook returns the alert book's stored value (key AlertsKey).
func (x *Detector) AlertBook() []byte { return x.d.book.appendBinary(nil) }

func newDetector(m *Model) *detector {
	return &detector{m: m, sites: map[string]*siteEntry{}, book: newAlertBook(&m.Alerts), totals: map[string]int{}}
}

// site returns the site's entry, creating an empty one; host "" is the
// population of the objects without a host. Entries of PriorOnly hosts
// keep the prior alone.
func (d *detector) site(host string) *siteEntry {
	e := d.sites[host]
	if e == nil {
		e = &siteEntry{prior: PriorOnly(host, d.m)}
		d.sites[host] = e
	}
	return e
}

// apply applies obs to obj (named name) with its site's profile se
// (d.site of the object's host, not of obs.Site, so that the estimate
// builders, which know only the name, find the same profile; nil: none),
// moves the alert book's clock and holds the shifts that pass the filters.
// Alerts of periods that closed are appended to d.out. It returns Apply's
// outcome.
func (d *detector) apply(name string, se *siteEntry, obj *Object, obs *records.Observation, eff *Effects) Outcome {
	prev := obj.LastTime()
	first := prev.IsZero() || d.book.periodOf(prev) < d.book.periodOf(obs.Time)
	d.out = d.book.Observe(obs.Time, first, d.out)
	var st *SiteState
	var pop population
	if se != nil {
		pop = population{&se.st.Pool, &se.st.Trend, &se.st.Flags, &se.st.Temper}
		if !se.prior {
			st = &se.st
		}
	}
	lastPoint := obj.ChangeWin.Last()
	oc := obj.applyAt(obs, d.m, st, pop, eff)
	now := seconds(obs.Time.UnixMilli())
	// the partition's clock: a reordered observation is confirmed when the
	// partition sees it, not before its testing period
	det := math.Max(now, float64(d.book.period*d.book.cfg.Period.Milliseconds())/1e3)
	var chProf *windows.Profile
	if st != nil {
		chProf = &st.Change
	}
	for _, sh := range eff.ChangeShifts {
		d.candidate(name, records.EstimateChange, sh, chProf, now, det)
	}
	var acProf *windows.Profile
	if st != nil {
		acProf = &st.Access
	}
	for _, sh := range eff.AccessShifts {
		switch {
		case obj.Rhythm.Active():
			// the window runs on the object's own clock (rhythm.go)
			d.shiftCandidate(name, records.EstimateAccess, sh, obj.clock(acProf, d.m), det)
			continue
		case obj.Rhythm.holdsAlerts(acProf):
			// the object is learning its own rhythm and the site's does
			// not fit it: its baseline is not known yet
			d.book.counts[candidateCount{records.EstimateAccess, outcomeLearning}]++
			continue
		}
		d.candidate(name, records.EstimateAccess, sh, acProf, now, det)
	}
	if eff.Visits && obj.ChangeWin.Last() == lastPoint && !prev.IsZero() {
		// a visit that saw no change: is the page's silence significant?
		d.silence(name, obj, chProf, seconds(prev.UnixMilli()), now, det)
	}
	return oc
}

// silence holds a silence candidate when the object's change window, an
// established rate, has had no update point for long enough that the
// silence test's p-value crossed Alerts.StrictPValue between the object's
// previous observation (prev) and this one (now; det the partition's clock).
func (d *detector) silence(name string, obj *Object, prof *windows.Profile, prev, now, det float64) {
	if _, ok := obj.ChangeWin.Origin(); !ok {
		return
	}
	toOp := func(t float64) float64 { return t }
	if prof != nil && prof.Active() {
		toOp = prof.At
	}
	if prof != nil && prof.Started() && !prof.Learned(now, &d.m.Seasonal) {
		return // the change baseline is still being learned
	}
	sum := obj.ChangeWin.Current(obj.ChangeWin.Last(), &d.m.Windows)
	if prof != nil && prof.Active() && prof.Real(sum.Start) < prof.Since() {
		return // the window mixes the two clocks (see candidate)
	}
	a, ok := SilenceAlert(name, sum, obj.ChangeWin.Last(), toOp(prev), toOp(now), det, profClock(prof), &d.m.Alerts)
	if ok {
		d.book.Add(a)
	}
}

// candidate filters a confirmed shift of kind's stream (run on prof's
// operational time; nil: real time) and holds it in the book; now is the
// observation's time and det the partition's clock when it was confirmed.
func (d *detector) candidate(name, kind string, sh windows.Shift, prof *windows.Profile, now, det float64) {
	count := func(outcome string) { d.book.counts[candidateCount{kind, outcome}]++ }
	// A profile that has started learning gates the alerts until its
	// learning period is over (a change profile starts with the site's
	// first Last-Modified date; without any, change alerts use a flat
	// baseline from the start).
	if prof != nil && prof.Started() && !prof.Learned(now, &d.m.Seasonal) {
		count(outcomeLearning) // the baseline is not known yet
		return
	}
	if prof != nil && prof.Active() && prof.Real(sh.After.Start) < prof.Since() {
		// the change point precedes the profile: the window mixes
		// real-time points of the learning period with operational
		// time, its excursion is the daily cycle, not a shift
		count(outcomeMixedClock)
		return
	}
	d.shiftCandidate(name, kind, sh, profClock(prof), det)
}

// shiftCandidate holds a shift whose baseline is known (on clock clk; nil:
// real time) in the book if it passes ShiftAlert's filters.
func (d *detector) shiftCandidate(name, kind string, sh windows.Shift, clk opClock, det float64) {
	if a, ok, why := ShiftAlert(name, kind, sh, clk, det, &d.m.Alerts); ok {
		d.book.Add(a)
	} else {
		d.book.counts[candidateCount{kind, why}]++
	}
}

// profClock returns p as an opClock (nil for nil).
func profClock(p *windows.Profile) opClock {
	if p == nil {
		return nil
	}
	return p
}

// flush closes the current period (end of a finite input).
func (d *detector) flush() { d.out = d.book.Close(d.out) }

// take returns and clears the alerts ready for publication.
func (d *detector) take() []records.Alert {
	out := d.out
	d.out = nil
	return out
}

// siteKey is the store key of a site's profile.
func siteKey(host string) string { return SiteKeyPrefix + host }

// loadSites reads the alert book (on the worker's first batch) and the
// profiles of the batch's sites that are not in memory, in one store read.
func (w *worker) loadSites(ctx context.Context, b *batchWork) error {
	d := w.det
	var hosts, keys []string
	if !d.loaded {
		hosts, keys = append(hosts, ""), append(keys, AlertsKey)
	}
	seen := map[string]bool{}
	for j := range b.objs {
		h := b.objs[j].site
		if seen[h] {
			continue
		}
		seen[h] = true
		if _, ok := d.sites[h]; !ok {
			hosts = append(hosts, h)
			keys = append(keys, siteKey(h))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	var vals [][]byte
	err := w.retryRead(func() (err error) { // transient errors retried in place (load)
		t0 := time.Now()
		w.storeMu.Lock()
		vals, err = w.p.store.Get(ctx, w.part, keys, nil)
		w.storeMu.Unlock()
		w.p.metrics.storeLatency.WithLabelValues("get").Observe(time.Since(t0).Seconds())
		return err
	})
	if errors.Is(err, errClaimEnded) {
		return err
	}
	if err != nil {
		return fmt.Errorf("aggregate: load %d site profiles of %s/%d: %w", len(keys), w.part.Topic, w.part.ID, err)
	}
	for k, v := range vals {
		if keys[k] == AlertsKey { // the alert book
			d.loaded = true
			if v != nil {
				if err := d.book.decodeBinary(v); err != nil {
					w.p.metrics.corrupt.Inc()
					w.log.Error("corrupt alert book; its held candidates are lost", "err", err)
				}
			}
			continue
		}
		e := &siteEntry{prior: PriorOnly(hosts[k], d.m)}
		if v != nil {
			if err := e.st.DecodeBinary(v); err != nil {
				w.p.metrics.corrupt.Inc()
				w.log.Error("corrupt site profile; learning it afresh", "site", hosts[k], "err", err)
				e.st = SiteState{}
			}
		}
		d.sites[hosts[k]] = e
	}
	return nil
}

// bindSites points each of the batch's objects at its site's profile, once
// loadSites read the missing ones (the table is trimmed only after the
// batch is applied, in writeSites).
func (w *worker) bindSites(b *batchWork) {
	for j := range b.objs {
		b.objs[j].se = w.det.site(b.objs[j].site)
	}
}

// writeSites appends the profiles the batch changed to its state writes
// and trims the in-memory table to DefaultMaxSites, evicting committed
// profiles only.
func (w *worker) writeSites(b *batchWork, touched map[*siteEntry]string) {
	// the alert book changes with every batch (its count of tested objects)
	// (encoded into the batch's slab, sliced by sliceWrites)
	b.enc = w.det.book.appendBinary(b.enc)
	b.writes = append(b.writes, state.Write{Object: AlertsKey})
	b.ends = append(b.ends, len(b.enc))
	for e, host := range touched {
		e.seq = b.seq
		b.enc = e.st.AppendBinary(b.enc)
		b.writes = append(b.writes, state.Write{Object: siteKey(host)})
		b.ends = append(b.ends, len(b.enc))
	}
	if len(w.det.sites) <= DefaultMaxSites {
		return
	}
	for h, e := range w.det.sites {
		if len(w.det.sites) <= DefaultMaxSites {
			break
		}
		if e.seq <= w.committed {
			if _, ok := touched[e]; !ok {
				delete(w.det.sites, h)
			}
		}
	}
}

// appendAlerts encodes the alerts whose period closed (and counts the
// candidates' outcomes).
func (w *worker) appendAlerts(out []stream.Message) []stream.Message {
	for k, n := range w.det.book.counts {
		w.p.metrics.candidates.WithLabelValues(k.kind, k.outcome).Add(float64(n))
		w.det.totals[k.outcome] += n
		w.p.stats.candidates[outcomeIndex(k.outcome)].Add(int64(n))
		delete(w.det.book.counts, k)
	}
	for _, a := range w.det.take() {
		w.p.metrics.alerts.WithLabelValues(a.Kind).Inc()
		w.p.stats.alerts.Add(1)
		if a.Scope == records.AlertScopeSite {
			w.p.stats.siteAlerts.Add(1)
		}
		out = append(out, w.encode(w.p.cfg.AlertsTopic, AlertKey(&a), a))
	}
	return out
}

// flushAlerts publishes the alerts of the last, open period at the end of
// a finite input (its state is committed: only outputs are written).
func (w *worker) flushAlerts(ctx context.Context) error {
	w.det.flush()
	out := w.appendAlerts(nil)
	if t := w.det.totals; len(t) > 0 {
		// a user replaying a log sees why shifts did not become alerts
		w.log.Info("rate shifts confirmed in this input and what became of them",
			"alerted", t[outcomeAlerted], "learning_period", t[outcomeLearning], "mixed_clock", t[outcomeMixedClock],
			"below_min_ratio_or_events", t[outcomeSmallEffect], "not_discoveries_at_fdr", t[outcomeNotDiscovery],
			"overflow", t[outcomeOverflow], "drops_against_rates_not_established", t[outcomeNotEstablished])
	}
	if len(out) == 0 {
		return nil
	}
	if err := w.writeOutputs(ctx, out, nil, w.pos+"final", false); err != nil {
		return fmt.Errorf("aggregate: final alerts: %w", err)
	}
	return nil
}
