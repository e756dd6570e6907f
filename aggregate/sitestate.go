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
// zero value is a site never seen; about 600 bytes encoded at most.
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
// so that the sites without any encode as before.
const (
	siteVersion        = 1
	siteVersionSitemap = 2
)

// AppendBinary appends the site's encoding: version, then each profile as a
// uvarint length and its windows.Profile encoding, then, when the prior's
// statistics are not all zero, its sums as float64 (poolSums, then
// poolOpenSums when it holds complete histories).
func (s *SiteState) AppendBinary(dst []byte) []byte {
	version := byte(siteVersion)
	if s.Sitemap.Checks() > 0 {
		version = siteVersionSitemap
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
	if version == siteVersionSitemap {
		dst = binary.AppendUvarint(dst, uint64(s.Sitemap.Agree))
		dst = binary.AppendUvarint(dst, uint64(s.Sitemap.Disagree))
	}
	if p := &s.Pool; *p != (estimators.PoolStats{}) {
		for _, v := range [...]float64{p.N, p.X, p.E, p.X2E, p.F} {
			dst = wire.AppendFloat64(dst, v)
		}
		if p.ON != 0 || p.OX != 0 || p.OX2 != 0 || p.OS != 0 || p.OXS != 0 || p.OS2 != 0 || p.Latest != 0 {
			for _, v := range [...]float64{p.ON, p.OX, p.OX2, p.OS, p.OXS, p.OS2, p.Latest} {
				dst = wire.AppendFloat64(dst, v)
			}
		}
	}
	return dst
}

// DecodeBinary replaces s with the site encoded in src. Errors wrap
// ErrCorrupt; on error s is unchanged.
func (s *SiteState) DecodeBinary(src []byte) error {
	r := wire.NewReader(src)
	v := r.Byte()
	if r.Err() == nil && v != siteVersion && v != siteVersionSitemap {
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
	if v == siteVersionSitemap && r.Err() == nil {
		a, d2 := r.Uvarint(), r.Uvarint()
		if a > math.MaxUint32 || d2 > math.MaxUint32 {
			r.Fail("sitemap checks overflow uint32")
		}
		d.Sitemap = SitemapTrust{Agree: uint32(a), Disagree: uint32(d2)}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: site: %w", ErrCorrupt, err)
	}
	if n := len(r.Rest()); n != 0 {
		if n != poolSums*8 && n != (poolSums+poolOpenSums)*8 {
			return fmt.Errorf("%w: site: %d trailing bytes", ErrCorrupt, n)
		}
		var v [poolSums + poolOpenSums]float64
		for i := range v[:n/8] {
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
	}
	*s = d
	return nil
}
