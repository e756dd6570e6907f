package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/sim"
	"github.com/changerate/changerate/records"
)

// phpDocBefore are the alert counts of php-doc before issue 36, measured
// with the build of commit 95cbebe (`ingest --format=changes-tsv … |
// aggregator --in=- --store=memory --out=/dev/null --emit=final
// --alerts-out=before.jsonl`), which this code cannot reproduce.
var phpDocBefore = struct {
	total, down, downCritical, up, inconsistent int
}{900, 888, 686, 12, 863}

// power is section 2: detection power against the oracle by traffic band.
func (r *report) power(ctx context.Context) error {
	p := r.p
	m := aggregate.DefaultModel()
	noScan := aggregate.DefaultModel()
	noScan.Alerts.ScanAlarms = aggregate.ScanOff
	p("\n## 2. Detection power against the oracle (issue 36)\n\n")
	p("The issue's world (`sim.IssueWorld`): 120 objects of 7 sites, 21 days, daily (peak/trough 7, peak hour by site) and\n")
	p("weekly cycles, rates log-uniform in the band's requests a day, every second object with one 4× burst of 1–3 h\n")
	p("after day 10, a 7-day learning period; one seed per band. The oracle knows each burst's window and tests its count\n")
	p("against the count expected there without the burst (the exact integral of the no-burst intensity):\n")
	p("detectable when P(Poisson(expected) ≥ count) < 10⁻⁶. Caught: an upward access alert whose window starts before\n")
	p("the burst ends, published by the burst's end + 1 h. Quiet objects alerted: any alert naming a burst-free object\n")
	p("after the learning period. \"before\" is this build with the scan off (`Alerts.ScanAlarms = ScanOff`: the 2×\n")
	p("CUSUM at 15 nats alone, as before issue 36); \"after\" the defaults (scan with `ScanAlarms` = FDR = 0.01 per\n")
	p("object and week). Target: ≥ 80 %% of the oracle-detectable bursts caught, ≤ 5 %% of quiet objects alerted.\n\n")
	p("| world | oracle-detectable | caught before | caught after | all bursts caught (after) | quiet alerted before | quiet alerted after | false alerts after | median min burst start → publication | median points to detection |\n")
	p("|---|---|---|---|---|---|---|---|---|---|\n")
	worlds := []struct {
		name   string
		lo, hi float64
	}{{"issue world, 40–400/day", 40, 400}, {"20–60/day", 20, 60}, {"60–200/day", 60, 200}, {"200–600/day", 200, 600}, {"600–2,000/day", 600, 2000}}
	scores := make([]sim.AlertScore, 2*len(worlds))
	if err := r.parallel(len(scores), func(k int) error {
		w := newWorld(sim.IssueWorld(uint64(36+k/2), worlds[k/2].lo, worlds[k/2].hi, false))
		mk := m
		if k%2 == 0 {
			mk = noScan
		}
		var err error
		scores[k], err = scoreWorld(ctx, w, mk)
		return err
	}); err != nil {
		return err
	}
	var lordenRows []string
	for i, w := range worlds {
		b, a := scores[2*i], scores[2*i+1]
		p("| %s | %d/%d | %d (%.0f %%) | %d (%.0f %%) | %d/%d | %d/%d | %d/%d | %d | %.0f | %.0f |\n", w.name, a.Detectable, a.Bursts,
			b.CaughtOracle, 100*b.OracleRate(), a.CaughtOracle, 100*a.OracleRate(), a.Caught, a.Bursts,
			b.QuietAlerted, b.Quiet, a.QuietAlerted, a.Quiet, a.FalseAlerts, median(a.Delays), median(a.DelayPoints))
		// Lorden: the optimal detector's worst-case mean delay for a
		// 4× rise at the measured false-alarm run length
		arl := a.QuietPoints / math.Max(float64(a.FalseAlerts), 1)
		info := math.Log(4) - 1 + 0.25
		lordenRows = append(lordenRows, fmt.Sprintf("| %s | %d | %.0f | %s%.0f | %.0f | %.0f | %.2f |", w.name, a.FalseAlerts, a.QuietPoints,
			map[bool]string{true: "≥ ", false: ""}[a.FalseAlerts == 0], arl, math.Log(arl)/info, median(a.DelayPoints), median(a.DelayPoints)/(math.Log(arl)/info)))
	}
	p("\nThe scan (windows.Config.ScanAlarms) confirms an upward excursion when the likelihood ratio of its pending\n")
	p("points, mixed over rises of 2, 4 and 8, reaches λ̂·1 week/ScanAlarms; it tests the excursions of the 2× CUSUM\n")
	p("and of its own CUSUM of 4× rises, whose change point is near a short burst's start. By Ville's inequality each\n")
	p("excursion's mixture crosses 1/a with probability ≤ a under no shift; a stream starts at most λ̂·1 week\n")
	p("excursions a week, so at most ScanAlarms false confirmations per object and week, whatever its traffic\n")
	p("(windows.TestScanFalseConfirmations: 22 beyond the CUSUM's on 400 stationary two-week streams at 400 points a\n")
	p("day, against a bound of 40). A nominal binomial level instead (10⁻⁶, or FDR over a week's points) alerted 5–11 of\n")
	p("60 quiet objects at 200–600 requests a day: the CUSUM chooses the window's start, so its p-value is not one.\n")
	p("The confirmed shifts then pass the same filters as before (ratio ≥ 2, ≥ 8 events, Benjamini–Hochberg at 1 %%).\n")
	p("Bursts caught beyond the oracle's are those whose count is significant on a window the scan chose (the oracle's\n")
	p("10⁻⁶ is stricter than the scan's budget at these traffic levels).\n\n")
	p("Detection delays beside Lorden's bound (Lorden 1971): for a 4× rise the Kullback–Leibler information per\n")
	p("post-change point is I = ln 4 − 1 + ¼ = 0.636 nats; the quiet objects' false alerts over their points after the\n")
	p("learning period give the run length to a false alarm ARL₀ (a lower bound when there was none), for which the\n")
	p("optimal detector's worst-case mean delay is about ln(ARL₀)/I points. Measured: the median points of the object from\n")
	p("the burst's start to the update point that confirmed it (caught bursts; publication waits for the testing\n")
	p("period's end, up to 1 h more).\n\n")
	p("| world | false alerts | quiet points | ARL₀ (points) | ln(ARL₀)/I | median delay (points) | ratio |\n|---|---|---|---|---|---|---|\n")
	for _, row := range lordenRows {
		p("%s\n", row)
	}
	p("\nA ratio below 1 is possible: Lorden's bound is for a detector that does not know the shift's size and time, at\n")
	p("the run length it achieves, and the bursts here are 4× with an onset the scan's CUSUM resets to within a few points.\n")

	return nil
}

// rhythm is section 3: each object's own rhythm.
func (r *report) rhythm(ctx context.Context) error {
	p := r.p
	m := aggregate.DefaultModel()
	siteOnly := aggregate.DefaultModel()
	siteOnly.DisableObjectRhythm = true
	p("\n## 3. Each object's own rhythm (issue 36)\n\n")
	p("The issue world with a daily peak hour of its own per page (uniform over the day) instead of its site's, so the\n")
	p("site's profile is wrong for every page. By default (`OBJECT_RHYTHM`, rhythm.go) an object with ≥ %d accesses a\n", aggregate.RhythmMinWeekly)
	p("week counts its accesses by UTC hour of day for %d days (24 counts in block floating point — 8-bit mantissas, one\n", aggregate.RhythmLearning/86400)
	p("exponent — with their exposure, halved at a day boundary when it reaches %d days; an hour's accesses enter its\n", aggregate.RhythmMemoryDays)
	p("count when the hour is over); then a G-test (χ²₂₃, level %g) asks whether the site's hour factors fit. If they\n", aggregate.RhythmFitLevel)
	p("do not, its access window restarts on its own clock (its hour factors, fitted from the counts, times the site's\n")
	p("day-of-week factors); if they do, it stays on the site's and drops its counts until a new check %d days later.\n", aggregate.RhythmRecheck/86400)
	p("During its first week of counting its access alerts are held when the counts so far already reject the site's\n")
	p("factors, and tested on the site's profile while they fit. \"site's profile\" is `OBJECT_RHYTHM=false`.\n\n")
	p("| world | configuration | oracle-detectable caught | quiet objects alerted | false alerts |\n|---|---|---|---|---|\n")
	worlds := []struct {
		name   string
		seed   uint64
		lo, hi float64
		phase  bool
	}{{"per-page phase, 40–400/day", 46, 40, 400, true}, {"per-page phase, 200–2,000/day", 47, 200, 2000, true}, {"site phase (issue world), 40–400/day", 36, 40, 400, false}, {"site phase, 20–60/day", 37, 20, 60, false}}
	configs := []struct {
		name string
		m    aggregate.Model
	}{{"site's profile (OBJECT_RHYTHM=false)", siteOnly}, {"own rhythm (default)", m}}
	scores := make([]sim.AlertScore, len(worlds)*len(configs))
	if err := r.parallel(len(scores), func(k int) error {
		w := worlds[k/len(configs)]
		var err error
		scores[k], err = scoreWorld(ctx, newWorld(sim.IssueWorld(w.seed, w.lo, w.hi, w.phase)), configs[k%len(configs)].m)
		return err
	}); err != nil {
		return err
	}
	for k, s := range scores {
		p("| %s | %s | %d/%d (%.0f %%) | %d/%d | %d |\n", worlds[k/len(configs)].name, configs[k%len(configs)].name,
			s.CaughtOracle, s.Detectable, 100*s.OracleRate(), s.QuietAlerted, s.Quiet, s.FalseAlerts)
	}
	p("\nThe cost is state, counted in the 256-byte budget (aggregate/size_test.go derives it for the bucketed layout: an\n")
	p("object of n state bytes costs at most 57 + jemalloc's class of n + 10 bytes of a bucket's MEMORY USAGE, within 256\n")
	p("up to n = 182): the rhythm section is about 35 bytes while an object counts, 7 between checks.\n")
	p("`TestEncodedSizeLongHistories` (30-day histories) reports each class's Redis bytes per object.\n")

	return nil
}

// phpDoc is section 4: php/doc-en's change history, before and after.
func (r *report) phpDoc(ctx context.Context) error {
	p := r.p
	p("\n## 4. php/doc-en's change history, before and after (issue 36)\n\n")
	obs, err := loadReal(filepath.Join(r.data, "php-doc-en-history", "git-file-changes.tsv.gz"), "changes-tsv")
	if err != nil {
		p("php-doc data not available: %v\n", err)
		return nil
	}
	res, err := run(ctx, slice(obs), aggregate.DefaultModel())
	if err != nil {
		return err
	}
	as := res.alerts // in publication order
	inconsistent := 0
	for _, x := range as {
		if x.PeriodStart != nil && x.WindowEnd != nil && x.PeriodStart.After(*x.WindowEnd) {
			inconsistent++
		}
	}
	p("`ingest --format=changes-tsv ../shared/data/php-doc-en-history/git-file-changes.tsv.gz --out=- | aggregator --in=-\n")
	p("--store=memory --out=/dev/null --emit=final --alerts-out=a.jsonl` (%d commits × files, 1999–2026; every line is a\n", len(obs))
	p("visit that saw a change, the update point the middle of the interval since the file's previous change).\n\n")
	p("| | alerts | drops (critical) | rises | silences | period_start after window_end |\n|---|---|---|---|---|---|\n")
	p("| before (95cbebe) | %d | %d (%d) | %d | – | %d |\n", phpDocBefore.total, phpDocBefore.down, phpDocBefore.downCritical, phpDocBefore.up, phpDocBefore.inconsistent)
	down, up, sil := 0, 0, 0
	downCrit := 0
	for _, x := range as {
		switch x.Test {
		case "cusum-binomial-down":
			down++
			if x.Severity == records.SeverityCritical {
				downCrit++
			}
		case "cusum-binomial-up":
			up++
		case aggregate.SilenceTest:
			sil++
		}
	}
	p("| after | %d | %d (%d) | %d | %d | %d |\n\n", len(as), down, downCrit, up, sil, inconsistent)
	outcome := func(o string) float64 { return res.candidates["change "+o] + res.candidates["access "+o] }
	p("Of the %.0f shifts confirmed (after), %.0f drops were held back as against a rate not established. A drop is alerted\n",
		outcome("alerted")+outcome("not_established")+outcome("small_effect")+outcome("not_discovery"), outcome("not_established"))
	p("only against an **established rate**: ")
	p("at least `MinEvents` (8) update points before the change point (the rate's relative standard error 1/√n ≤ 35 %%, so\n")
	p("a halving is two standard errors away) over a span at least as long as the drop's window (`Established`). A new\n")
	p("file's first burst of edits — the 888 drops of before, raised when a burst of a few edits in hours ended and the\n")
	p("next edit came days later — has a rate seen for hours, which says nothing about what is normal over days: every\n")
	p("file edited in sessions would \"drop\" after each session. Silences cannot occur here: every line is a change (a\n")
	p("crawler's visits without change are what a silence is tested at; aggregate.TestSilenceAlert). The times: an alert's\n")
	p("`as_of` and `window_end` are now when the partition confirmed it (the visit), not the update point in the middle\n")
	p("of the visit interval, which for a file edited once a year lies months before; so `period_start` ≤ `window_end`.\n\n")
	p("Twenty alerts, sampled in time order from the %d (every alert when fewer), each in words:\n\n", len(as))
	sample := as
	if len(sample) > 20 {
		rng := sim.NewRand(36, 20)
		idx := rng.Perm(len(as))[:20]
		sort.Ints(idx)
		sample = nil
		for _, i := range idx {
			sample = append(sample, as[i])
		}
	}
	p("| # | file | test | window | observed / expected | before: edits over | explanation |\n|---|---|---|---|---|---|---|\n")
	for i, x := range sample {
		bd := x.WindowStart.Sub(x.Before.Start).Hours() / 24
		wd := x.WindowEnd.Sub(*x.WindowStart).Hours() / 24
		exp := 0.0
		if x.Expected != nil {
			exp = *x.Expected
		}
		var why string
		switch x.Test {
		case "cusum-binomial-up":
			why = fmt.Sprintf("%.0f× the file's rate of the previous %.0f days for %.0f days: a burst of editing (p = %.1g)", *x.Ratio, bd, wd, x.PValue)
		case "cusum-binomial-down":
			why = fmt.Sprintf("edited %.0f times less than over the previous %.0f days (%d edits) for %.0f days: an established rate fell (p = %.1g)",
				1 / *x.Ratio, bd, x.Before.Points, wd, x.PValue)
		default:
			why = fmt.Sprintf("no edit for %.0f days where %.1f were expected (p = %.1g)", wd, exp, x.PValue)
		}
		p("| %d | `%s` | %s %s | %s – %s | %d / %.1f | %d over %.0f days | %s |\n", i+1, x.Object, x.Test, x.Severity,
			x.WindowStart.Format("2006-01-02"), x.WindowEnd.Format("2006-01-02"), x.Observed, exp, x.Before.Points, bd, why)
	}
	p("\nRead with the repository's history (an interpretation, not checked commit by commit): the rises of 2000–2002 fall\n")
	p("in the years the manual's function references were being written, the drops of 2002–2004 are files of that time\n")
	p("going quiet afterwards (`functions/*.xml` were later split into `reference/*/functions/*.xml`), and the rises of\n")
	p("`language-snippets.ent` and of migration guides look like release work: `appendices/migration54.xml` had 22 edits\n")
	p("on 2012-03-01/02, the days PHP 5.4.0 was released, where 0.1 were expected. The drops of 2009–2024 are long-lived\n")
	p("pages (types, operators, the command line, PCRE syntax, the installation FAQ) edited several times less over\n")
	p("years than in the years before: the \"has not changed as it used to\" alert a documentation team can act on.\n")
	return nil
}
