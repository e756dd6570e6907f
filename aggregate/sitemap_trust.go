package aggregate

import (
	"encoding/binary"

	"github.com/changerate/changerate/internal/wire"
	"github.com/changerate/changerate/records"
)

// Sitemap trust.
//
// A sitemap's <lastmod> (an observation of Format "sitemap": a visit at
// the sitemap's fetch time whose LastModified is the claim) is the site's
// word, and sites often get it wrong: a lastmod that is the time the
// sitemap was generated, or one that never moves. The aggregator checks
// the word against what visits with digests (a crawler, a web archive's
// CDX) saw of the same URLs, and keeps per site (SiteState.Sitemap) the
// checks that agreed and those that did not.
//
// Per object it remembers, from its first sitemap observation on, the
// standing claim L (the latest lastmod) and the visits' latest run of
// unchanged content: runStart (the visit that saw the current content
// first), runLast (the latest visit), runPrev (the visit before runStart
// when the content changed between them; 0 when unknown). A claim gets at
// most one decided verdict, when a sitemap brings it or when later visits
// make it decidable:
//
//   - agree: the visits saw the change it dates: runPrev < L+s and
//     L ≤ runStart (the change happened in (runPrev, runStart]);
//   - disagree, "lastmod moved without a digest change": it dates a
//     change inside a run of unchanged visits: runStart < L and
//     L+s ≤ runLast;
//   - disagree, "a digest change without a lastmod move": a sitemap
//     fetched at f ≥ runStart still claims L+s ≤ runPrev, although the
//     visits saw a change after runPrev (checked at each fetch after a
//     change, whether the claim is new or not);
//   - undecided otherwise (a claim after the latest visit, no change
//     seen yet).
//
// s is the claim's precision: a day for a lastmod at midnight UTC (a date
// alone, as sitemaps often give it, is midnight of the day of the
// change), else 0.
//
// Trust is the share of agreeing checks with one of each added (the mean
// of the Beta(1,1) posterior of the agreement rate): (a+1)/(a+d+2). A site
// is untrusted when it has at least sitemapMinChecks checks and a trust
// below sitemapMinTrust (1/2: its claims are more often wrong than right,
// so a claim is worse than none). Then its lastmods stop counting as
// evidence: its sitemap observations are applied as no information (the
// checks go on, so a site that mends its sitemaps regains trust). A
// sitemap observation of an object that visits with digests cover is no
// evidence either (the digests are better evidence; counting both would
// count one change twice); it only feeds the check. Without site state
// (seasonal baselines off, or an object without a site) there is no trust
// to consult and a sitemap's lastmod counts as evidence.
const (
	lastmodSlack     = 86400 // seconds: the precision of a date alone
	sitemapMinChecks = 5
	sitemapMinTrust  = 0.5
)

// SitemapTrust is a site's record of sitemap checks.
type SitemapTrust struct {
	Agree, Disagree uint32
}

// Checks is the number of decided checks.
func (t SitemapTrust) Checks() uint32 { return t.Agree + t.Disagree }

// Trust is (Agree+1)/(Agree+Disagree+2).
func (t SitemapTrust) Trust() float64 {
	return (float64(t.Agree) + 1) / (float64(t.Agree) + float64(t.Disagree) + 2)
}

// Trusted reports whether the site's lastmods count as evidence.
func (t SitemapTrust) Trusted() bool {
	return t.Checks() < sitemapMinChecks || t.Trust() >= sitemapMinTrust
}

func (t *SitemapTrust) count(v sitemapVerdict) {
	switch v {
	case verdictAgree:
		if t.Agree < ^uint32(0) {
			t.Agree++
		}
	case verdictDisagree:
		if t.Disagree < ^uint32(0) {
			t.Disagree++
		}
	}
}

type sitemapVerdict uint8

const (
	verdictNone sitemapVerdict = iota // no check made (same claim, nothing new seen)
	verdictUndecided
	verdictAgree
	verdictDisagree
)

var verdictNames = [...]string{"none", "undecided", "agree", "disagree"}

// SitemapUse says what became of a sitemap observation's lastmod.
type SitemapUse uint8

const (
	SitemapNone      SitemapUse = iota // not a sitemap observation
	SitemapEvidence                    // counted as Last-Modified evidence
	SitemapCrawled                     // not counted: the object's visits have digests
	SitemapUntrusted                   // not counted: the site is untrusted
)

var sitemapUseNames = [...]string{"", "evidence", "crawled", "untrusted"}

func (u SitemapUse) String() string { return sitemapUseNames[u] }

// sitemapState is an object's memory for the checks (see above); zero
// until its first sitemap observation. Times in Unix seconds.
type sitemapState struct {
	flags                      uint8
	lm                         int64 // the standing claim
	runStart, runLast, runPrev int64
}

const (
	smOn      = 1 << 0 // tracking (a sitemap observation was seen)
	smClaim   = 1 << 1 // lm is set
	smJudged  = 1 << 2 // the standing claim had its verdict
	smChanged = 1 << 3 // the visits saw a change since the last sitemap observation
	smFlags   = smOn | smClaim | smJudged | smChanged
)

// slack is the precision of a claim: a day for a lastmod at midnight UTC
// (a date without a time, as sitemaps often give it), else none.
func slack(lm int64) int64 {
	if lm%86400 == 0 {
		return lastmodSlack
	}
	return 0
}

// judge compares the standing claim with the visits' latest run.
func (s *sitemapState) judge() sitemapVerdict {
	sl := slack(s.lm)
	switch {
	case s.runLast == 0:
		return verdictUndecided
	case s.runStart < s.lm && s.lm+sl <= s.runLast:
		return verdictDisagree // moved without a digest change
	case s.runPrev != 0 && s.runPrev < s.lm+sl && s.lm <= s.runStart:
		return verdictAgree // dates the change the visits saw
	}
	return verdictUndecided
}

// crawl records an informative visit with a digest (not a sitemap's) at
// ts: changed says its content differs from the previous visit's. It
// judges the standing claim when it has no verdict yet.
func (s *sitemapState) crawl(ts int64, changed bool) sitemapVerdict {
	if s.flags&smOn == 0 {
		return verdictNone
	}
	switch {
	case s.runLast == 0:
		s.runStart, s.runLast, s.runPrev = ts, ts, 0
	case changed:
		s.runPrev, s.runStart, s.runLast = s.runLast, ts, ts
		s.flags |= smChanged
	default:
		s.runLast = ts
	}
	if s.flags&(smClaim|smJudged) != smClaim {
		return verdictNone
	}
	v := s.judge()
	if v != verdictUndecided {
		s.flags |= smJudged
		return v
	}
	return verdictNone
}

// check judges the claim lm of a sitemap fetched at f.
func (s *sitemapState) check(lm, f int64) sitemapVerdict {
	newClaim := s.flags&smClaim == 0 || lm != s.lm
	changed := s.flags&smChanged != 0
	s.flags = (s.flags | smOn | smClaim) &^ smChanged
	if newClaim {
		s.lm = lm
		s.flags &^= smJudged
	}
	// A change the visits saw after the claimed date, in a sitemap
	// fetched after the visit that saw it: the lastmod did not move.
	if (newClaim || changed) && s.runPrev != 0 && lm+slack(lm) <= s.runPrev && s.runStart <= f {
		s.flags |= smJudged
		return verdictDisagree
	}
	if s.flags&smJudged != 0 {
		return verdictNone
	}
	v := s.judge()
	if v != verdictUndecided {
		s.flags |= smJudged
		return v
	}
	if newClaim {
		return verdictUndecided
	}
	return verdictNone
}

// sitemap handles a sitemap observation of o (see above) and reports
// whether its lastmod counts as evidence; the check's verdict and the use
// are recorded in eff and, when the site has state, in its trust.
func (o *Object) sitemap(obs *records.Observation, site *SiteState, eff *Effects) bool {
	v := o.sm.check(obs.LastModified.Unix(), obs.Time.Unix())
	eff.SitemapCheck = v
	if site != nil && (v == verdictAgree || v == verdictDisagree) {
		site.Sitemap.count(v)
		eff.SiteChanged = true
	}
	switch {
	case o.flags&hasDigest != 0 || o.sm.runLast != 0:
		eff.SitemapUse = SitemapCrawled
	case site != nil && !site.Sitemap.Trusted():
		eff.SitemapUse = SitemapUntrusted
	default:
		eff.SitemapUse = SitemapEvidence
	}
	return eff.SitemapUse == SitemapEvidence
}

// appendBinary appends the state: flags, then lm, runStart, runLast,
// runPrev as varints.
func (s *sitemapState) appendBinary(dst []byte) []byte {
	dst = append(dst, s.flags)
	for _, v := range [...]int64{s.lm, s.runStart, s.runLast, s.runPrev} {
		dst = binary.AppendVarint(dst, v)
	}
	return dst
}

func (s *sitemapState) decode(d *wire.Reader) {
	s.flags = d.Byte()
	s.lm, s.runStart, s.runLast, s.runPrev = d.Varint(), d.Varint(), d.Varint(), d.Varint()
}
