package parse

import (
	"bytes"
	"time"

	"github.com/changerate/changerate/records"
)

// Squid store.log (Squid 2.x and later):
//
//	time action dir file key status Date Last-Modified Expires type expected/actual method URL
//
// The columns are read from both ends (time, action and file from the
// left; URL, method, sizes, type, Expires, Last-Modified, Date and status
// from the right), so versions with extra middle columns parse too. A store
// event of content fetched from the origin is a visit (records.KindVisit)
// at the event time, with LastModified when the Last-Modified column holds
// a time ("-1" missing, "-2" unparsable and "?" are absent; one later than
// the Date column is the Date, RFC 9110 §8.8.2.1). Status 304
// (revalidated, not modified) makes the visit Unchanged.
//
// Which events are visits: SWAPOUT (stored after a fetch), CREATE, and
// RELEASE of an object never swapped out (file number FFFFFFFF: fetched but
// not cached, including 304 revalidations). SWAPIN (read back from the
// cache) and RELEASE of a stored object (an eviction, whose fetch was
// already logged by its SWAPOUT) are skipped with reasons "swapin" and
// "evicted".
type storeLogParser struct {
	canon *Canonicalizer
	f     [16][]byte
}

// Skip reasons of store.log.
const (
	ReasonSwapIn  = "swapin"
	ReasonEvicted = "evicted"
)

func newStoreLog(cfg Config) (lineParser, error) {
	return &storeLogParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries)}, nil
}

func (p *storeLogParser) Format() string { return "storelog" }

func (p *storeLogParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	if len(bytes.TrimSpace(line)) == 0 {
		return skip(ReasonEmpty)
	}
	if line[0] == '#' {
		return skip(ReasonComment)
	}
	f := p.f[:]
	n, rest := splitFields(line, f)
	if len(bytes.TrimSpace(rest)) > 0 || n == len(f) {
		return reject(ReasonFields, "store.log line has more than %d fields", len(f)-1)
	}
	if n < 12 {
		return reject(ReasonFields, "store.log line has %d fields, want at least 12", n)
	}
	t, err := epochTime(f[0])
	if err != nil {
		return reject(ReasonTime, "store.log time %q: %v", trunc(f[0]), err)
	}
	action := f[1]
	url, method, sizes := f[n-1], f[n-2], f[n-3]
	lastMod, date, statusF := f[n-6], f[n-7], f[n-8]
	_ = method
	if bytes.IndexByte(sizes, '/') < 0 {
		return reject(ReasonFields, "store.log sizes %q are not expected/actual", trunc(sizes))
	}
	switch string(action) {
	case "SWAPIN":
		return skip(ReasonSwapIn)
	case "RELEASE":
		if !bytes.EqualFold(f[3], []byte("FFFFFFFF")) {
			return skip(ReasonEvicted)
		}
	case "SWAPOUT", "CREATE":
	default:
		return reject(ReasonFields, "store.log action %q", trunc(action))
	}
	status, err := parseStatus(statusF)
	if err != nil {
		return err
	}
	lm, err := storeTime(lastMod)
	if err != nil {
		return err
	}
	// A Last-Modified later than the response's Date is the origin's
	// clock error: RFC 9110 §8.8.2.1 has the origin send its Date instead,
	// and so it is read here (an unreadable Date leaves it as it is).
	if d, err := storeTime(date); err == nil && !d.IsZero() && lm.After(d) {
		lm = d
	}
	obj, _, err := p.canon.Canonical(url)
	if err != nil {
		return err
	}
	obs.Object, obs.Site, obs.Time, obs.Status, obs.Format = obj, records.SiteOf(obj), t, status, "storelog"
	obs.Kind = records.KindVisit
	obs.LastModified = lm
	if status == 304 {
		obs.Changed = records.Unchanged
	}
	return nil
}

// storeTime parses a store.log header time: Unix seconds, or -1, -2, ? for
// none.
func storeTime(b []byte) (time.Time, error) {
	if (len(b) == 1 && b[0] == '?') || (len(b) > 0 && b[0] == '-') {
		if len(b) == 1 && b[0] == '?' {
			return time.Time{}, nil
		}
		if _, err := atoi(b); err != nil {
			return time.Time{}, reject(ReasonTime, "store.log header time %q", trunc(b))
		}
		return time.Time{}, nil
	}
	t, err := epochTime(b)
	if err != nil {
		return time.Time{}, reject(ReasonTime, "store.log header time %q: %v", trunc(b), err)
	}
	if t.Unix() == 0 {
		return time.Time{}, nil
	}
	return t, nil
}

func (p *storeLogParser) canonicalizer() *Canonicalizer { return p.canon }
