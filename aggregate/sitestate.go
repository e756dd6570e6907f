package aggregate

import (
	"encoding/binary"
	"fmt"
	"math"

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
}

// siteVersion is the first byte of an encoded SiteState; siteVersionSitemap
// that of a site with sitemap checks (version 1's layout, then the checks),
// so that the sites without any encode as before.
const (
	siteVersion        = 1
	siteVersionSitemap = 2
)

// AppendBinary appends the site's encoding: version, then each profile as a
// uvarint length and its windows.Profile encoding.
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
	if len(r.Rest()) != 0 {
		return fmt.Errorf("%w: site: %d trailing bytes", ErrCorrupt, len(r.Rest()))
	}
	*s = d
	return nil
}
