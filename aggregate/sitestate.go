package aggregate

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/changerate/changerate/estimators"
	"github.com/changerate/changerate/internal/wire"
	"github.com/changerate/changerate/windows"
)

// SiteState is the seasonal state of one site in one partition, stored
// beside its objects (key SiteKeyPrefix + host): the daily and weekly
// profile of its objects' accesses, and that of their changes, learned
// from Last-Modified dates (exact change times; existence-of-change visits
// say only that a change happened between two visits, and a crawler's own
// schedule would become the profile). A change profile is used for a site's
// change windows once the site has enough dated changes
// (SeasonalConfig.MinEvents); until then they keep a flat baseline. The
// zero value is a site never seen; about 600 bytes encoded at most, up
// to 611 more for the trend of a population of complete histories (32
// closed years of 18 bytes: a 2-byte varint year and two float64 sums;
// 35 bytes of count, current year, sums and discount), 40 for the
// spacing sums of its objects with regular visits (five float64), and 73
// for the tempering scores (a count and nine float64).
type SiteState struct {
	Access windows.Profile
	Change windows.Profile
	// Sitemap is the record of the site's sitemap checks (sitemap_trust.go).
	Sitemap SitemapTrust
	// Pool holds the sufficient statistics of the site's change-rate
	// prior over its objects' current evidence (siteprior.go); encoded
	// after the profiles when not empty (states written before it decode
	// with none).
	Pool estimators.PoolStats
	// Trend holds the population totals per calendar year of the site's
	// complete histories (estimators/trend.go); encoded after the prior's
	// sums when not empty (states written before it decode with none).
	Trend estimators.Trend
	// Flags holds the sums of the site's objects' spacing factors
	// (estimators/dependence_pool.go, R7; siteprior.go); encoded after
	// the sitemap checks, in version siteVersionFlags, when not empty
	// (states written before it decode with none).
	Flags estimators.FlagPool
	// Temper holds the site's summed one-step log predictive scores of
	// its objects' visits under each ω of estimators.TemperGrid
	// (estimators/tempered.go T3; sitetemper.go), one float64 per grid
	// point; encoded after the spacing sums, in version siteVersionTemper,
	// when not all zero (states written before it decode with none: the
	// plan's ω is then 1, the stationary posterior, until visits are
	// scored).
	Temper [estimators.TemperPoints]float64
}

// poolSums and poolOpenSums are the numbers of float64 sums of an encoded
// prior: N, X, E, X2E, F, then, when the site has complete histories, ON,
// OX, OX2, OS, OXS, OS2, Latest (estimators.PoolStats).
const (
	poolSums     = 5
	poolOpenSums = 7
)

// siteVersion is the first byte of an encoded SiteState; siteVersionSitemap
// that of a site with sitemap checks (version 1's layout, then the checks),
// so that the sites without any encode as before; siteVersionFlags that of
// a site with spacing sums (version 2's layout, then flagSums float64), so
// that the sites without any encode as before them; siteVersionBack that
// of a site with the end-spacing sums too (then backSums float64);
// siteVersionTemper that of a site with tempering scores (version 4's
// layout, the spacing sums written even when empty with a byte between the
// two groups, 1 for a Legacy pool whose backSums are then absent, then a
// uvarint count of scores and the scores as float64), so that the sites
// without any encode as before them.
const (
	siteVersion        = 1
	siteVersionSitemap = 2
	siteVersionFlags   = 3
	siteVersionBack    = 4
	siteVersionTemper  = 5
)

// flagSums is the number of float64 sums of an encoded FlagPool: N, U, UR,
// UR2, U2; versions siteVersionBack and siteVersionTemper add backSums: B,
// BD, BV (the backward-recurrence sums, estimators/dependence_back.go R15).
// A pool decoded from version 3 is Legacy (its sums lack B, BD, BV) and
// encodes as version 3 again (or as version 5 with the legacy mark), until
// a replay writes the sums.
const (
	flagSums = 5
	backSums = 3
)

// AppendBinary appends the site's encoding: version, then each profile as a
// uvarint length and its windows.Profile encoding, then (versions 2 to 5)
// the sitemap checks as two uvarints, then (versions 3 to 5) the spacing
// sums as float64 (version 5: the five sums, the legacy byte, the three
// end-spacing sums unless legacy), then (version 5) the tempering scores (a
// uvarint count and as many float64), then, when the prior's
// statistics are not all zero, its sums as float64 (poolSums, then
// poolOpenSums when it holds complete histories), then, when the trend is
// not empty, the trend (appendTrend; the open sums are then always
// written).
func (s *SiteState) AppendBinary(dst []byte) []byte {
	version := byte(siteVersion)
	if s.Sitemap.Checks() > 0 {
		version = siteVersionSitemap
	}
	if !s.Flags.Empty() {
		version = siteVersionBack
		if s.Flags.Legacy {
			version = siteVersionFlags
		}
	}
	if s.Temper != ([estimators.TemperPoints]float64{}) {
		version = siteVersionTemper
	}
	dst = append(dst, version)
	for _, p := range [...]*windows.Profile{&s.Access, &s.Change} {
		// The profile is appended first and its length put in front of it
		// (a move of a few hundred bytes, no scratch buffer).
		mark := len(dst)
		dst = p.AppendBinary(dst)
		n := len(dst) - mark
		var lb [binary.MaxVarintLen64]byte
		k := binary.PutUvarint(lb[:], uint64(n))
		dst = append(dst, lb[:k]...)
		copy(dst[mark+k:], dst[mark:mark+n])
		copy(dst[mark:], lb[:k])
	}
	if version >= siteVersionSitemap {
		dst = binary.AppendUvarint(dst, uint64(s.Sitemap.Agree))
		dst = binary.AppendUvarint(dst, uint64(s.Sitemap.Disagree))
	}
	if version >= siteVersionFlags {
		f := &s.Flags
		for _, v := range [...]float64{f.N, f.U, f.UR, f.UR2, f.U2} {
			dst = wire.AppendFloat64(dst, v)
		}
		legacy := version == siteVersionFlags
		if version == siteVersionTemper {
			legacy = f.Legacy
			dst = append(dst, b2u8(legacy))
		}
		if !legacy {
			for _, v := range [...]float64{f.B, f.BD, f.BV} {
				dst = wire.AppendFloat64(dst, v)
			}
		}
	}
	if version == siteVersionTemper {
		dst = appendTemper(dst, &s.Temper)
	}
	trend := !s.Trend.Empty()
	if p := &s.Pool; *p != (estimators.PoolStats{}) || trend {
		for _, v := range [...]float64{p.N, p.X, p.E, p.X2E, p.F} {
			dst = wire.AppendFloat64(dst, v)
		}
		if trend || p.ON != 0 || p.OX != 0 || p.OX2 != 0 || p.OS != 0 || p.OXS != 0 || p.OS2 != 0 || p.Latest != 0 {
			for _, v := range [...]float64{p.ON, p.OX, p.OX2, p.OS, p.OXS, p.OS2, p.Latest} {
				dst = wire.AppendFloat64(dst, v)
			}
		}
	}
	if trend {
		dst = appendTrend(dst, &s.Trend)
	}
	return dst
}

// b2u8 is 1 for true, 0 for false.
func b2u8(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// DecodeBinary replaces s with the site encoded in src. Errors wrap
// ErrCorrupt; on error s is unchanged.
func (s *SiteState) DecodeBinary(src []byte) error {
	r := wire.NewReader(src)
	v := r.Byte()
	if r.Err() == nil && (v < siteVersion || v > siteVersionTemper) {
		return fmt.Errorf("%w: site version %d", ErrCorrupt, v)
	}
	var d SiteState
	for _, p := range []*windows.Profile{&d.Access, &d.Change} {
		n := r.Uvarint()
		if r.Err() != nil {
			break
		}
		rest := r.Rest()
		if n > uint64(len(rest)) {
			r.Fail("site profile length")
			break
		}
		if err := p.DecodeBinary(rest[:n]); err != nil {
			return fmt.Errorf("%w: site: %w", ErrCorrupt, err)
		}
		r.Skip(int(n))
	}
	if v >= siteVersionSitemap && r.Err() == nil {
		a, d2 := r.Uvarint(), r.Uvarint()
		if a > math.MaxUint32 || d2 > math.MaxUint32 {
			r.Fail("sitemap checks overflow uint32")
		}
		d.Sitemap = SitemapTrust{Agree: uint32(a), Disagree: uint32(d2)}
	}
	if v >= siteVersionFlags && r.Err() == nil {
		var f [flagSums + backSums]float64
		for i := range f[:flagSums] {
			f[i] = r.Float64()
		}
		legacy := v == siteVersionFlags
		if v == siteVersionTemper {
			switch b := r.Byte(); {
			case r.Err() != nil:
			case b > 1:
				return fmt.Errorf("%w: site: legacy mark %d", ErrCorrupt, b)
			default:
				legacy = b == 1
			}
		}
		k := flagSums
		if !legacy {
			for i := range f[flagSums:] {
				f[flagSums+i] = r.Float64()
			}
			k += backSums
		}
		for i, x := range f[:k] {
			// Sums of added and removed terms may round a little below 0;
			// every term is ≥ 0 but B's (S_X − μ̂, index 5), which is
			// signed.
			if r.Err() == nil && (math.IsInf(x, 0) || math.IsNaN(x) || (i != flagSums && !(x >= -1e-6*math.Max(1, math.Abs(x))))) {
				return fmt.Errorf("%w: site: spacing sums %v", ErrCorrupt, f[:k])
			}
		}
		d.Flags = estimators.FlagPool{N: f[0], U: f[1], UR: f[2], UR2: f[3], U2: f[4],
			B: f[5], BD: f[6], BV: f[7], Legacy: legacy}
	}
	if v == siteVersionTemper && r.Err() == nil {
		if err := decodeTemper(&r, &d.Temper); err != nil {
			return fmt.Errorf("%w: site: %w", ErrCorrupt, err)
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: site: %w", ErrCorrupt, err)
	}
	if n := len(r.Rest()); n != 0 {
		if n != poolSums*8 && n < (poolSums+poolOpenSums)*8 {
			return fmt.Errorf("%w: site: %d trailing bytes", ErrCorrupt, n)
		}
		var v [poolSums + poolOpenSums]float64
		k := min(n/8, poolSums+poolOpenSums)
		for i := range v[:k] {
			v[i] = r.Float64()
			// Sums of added and removed evidence may round a little below
			// 0 (the open sums' times are Unix seconds, not negative).
			if r.Err() == nil && !(v[i] >= -1e-6*math.Max(1, math.Abs(v[i]))) {
				return fmt.Errorf("%w: site: prior sums %v", ErrCorrupt, v)
			}
		}
		if err := r.Err(); err != nil {
			return fmt.Errorf("%w: site: prior sums: %w", ErrCorrupt, err)
		}
		d.Pool = estimators.PoolStats{N: v[0], X: v[1], E: v[2], X2E: v[3], F: v[4],
			ON: v[5], OX: v[6], OX2: v[7], OS: v[8], OXS: v[9], OS2: v[10], Latest: v[11]}
		if len(r.Rest()) > 0 {
			if err := decodeTrend(&r, &d.Trend); err != nil {
				return fmt.Errorf("%w: site: trend: %w", ErrCorrupt, err)
			}
		}
	}
	*s = d
	return nil
}

// appendTrend appends the trend: the number of closed periods (uvarint),
// the current period's year (varint), changes, objects, entry-time sum
// and the level's discount ω (float64), then each closed period's first
// year (varint), changes and exposure (float64), oldest first.
func appendTrend(dst []byte, tr *estimators.Trend) []byte {
	dst = binary.AppendUvarint(dst, uint64(tr.NClosed))
	dst = binary.AppendVarint(dst, int64(tr.Year))
	for _, v := range [...]float64{tr.C, tr.Objects, tr.S, tr.Omega} {
		dst = wire.AppendFloat64(dst, v)
	}
	for _, p := range tr.Periods[:tr.NClosed] {
		dst = binary.AppendVarint(dst, int64(p.Year))
		dst = wire.AppendFloat64(dst, p.C)
		dst = wire.AppendFloat64(dst, p.D)
	}
	return dst
}

// decodeTrend reads appendTrend's encoding, the rest of r, into tr: at
// most MaxTrendPeriods closed periods, their years increasing and before
// the current one, every sum finite and not negative (beyond rounding).
func decodeTrend(r *wire.Reader, tr *estimators.Trend) error {
	var d estimators.Trend
	n := r.Uvarint()
	if err := r.Err(); err != nil {
		return err
	}
	if n > estimators.MaxTrendPeriods {
		return fmt.Errorf("%d periods, at most %d", n, estimators.MaxTrendPeriods)
	}
	d.NClosed = int(n)
	y := r.Varint()
	d.C, d.Objects, d.S, d.Omega = r.Float64(), r.Float64(), r.Float64(), r.Float64()
	if r.Err() == nil && !(d.Omega >= 0 && d.Omega <= 1) {
		return fmt.Errorf("discount %v, want in [0, 1]", d.Omega)
	}
	vals := []float64{d.C, d.Objects, d.S}
	prev := int64(math.MinInt32)
	for i := range d.Periods[:d.NClosed] {
		py := r.Varint()
		c, e := r.Float64(), r.Float64()
		if r.Err() != nil {
			break
		}
		if py <= prev || py >= y {
			return fmt.Errorf("period year %d after %d, current %d", py, prev, y)
		}
		prev = py
		d.Periods[i] = estimators.TrendPeriod{Year: int32(py), C: c, D: e}
		vals = append(vals, c, e)
	}
	if err := r.Err(); err != nil {
		return err
	}
	if len(r.Rest()) != 0 {
		return fmt.Errorf("%d trailing bytes", len(r.Rest()))
	}
	if y < math.MinInt32 || y > math.MaxInt32 {
		return fmt.Errorf("year %d", y)
	}
	d.Year = int32(y)
	for _, v := range vals {
		if math.IsInf(v, 0) || !(v >= -1e-6*math.Max(1, math.Abs(v))) {
			return fmt.Errorf("sums %v", vals)
		}
	}
	*tr = d
	return nil
}
