package parse

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/changerate/changerate/records"
)

// Snapshot lines: indirect data for Matloff's estimators. Each line is one
// poll of one object at the end of a polling period:
//
//	object  poll_time  period  last_event  event
//
//	/srv/pub/a.iso       2024-01-02T00:00:00Z  86400  2024-01-01T13:05:00Z  access
//	http://ex.com/feed   1704153600            24h    -                     modification
//
// separated by blanks or tabs ('#' starts a comment line):
//
//   - object: the object's identity, without blanks (percent-encode them);
//     an absolute http(s) URL is canonicalised (and gives the site), any
//     other identity (a path) is kept as written;
//   - poll_time: when the poll happened, the end of the period: RFC 3339
//     (a time without a zone needs Config.Zone) or Unix seconds with an
//     optional fraction;
//   - period: the polling period τ, in seconds ("86400", "0.5") or as a Go
//     duration ("24h", "15m");
//   - last_event: the object's last access or modification time as seen at
//     the poll, in the same forms as poll_time; "-" when none happened in
//     the period. A time before the period (the event is older) is
//     written as "-" too: Matloff's data records only whether and when the
//     last event fell within the period;
//   - event: "access" (atime; also "a", "atime") or "modification" (mtime;
//     also "m", "mtime").
//
// The observation is a records.KindSnapshot; it is validated
// (records.Observation.Validate), so a last_event outside
// (poll_time − period, poll_time] is rejected with reason "invalid".
type snapshotParser struct {
	canon *Canonicalizer
	zone  *time.Location
	f     [6][]byte
}

func newSnapshot(cfg Config) (lineParser, error) {
	return &snapshotParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries), zone: cfg.Zone}, nil
}

func (p *snapshotParser) Format() string { return "snapshot" }

func (p *snapshotParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	if len(bytes.TrimSpace(line)) == 0 {
		return skip(ReasonEmpty)
	}
	if bytes.TrimLeft(line, " \t")[0] == '#' {
		return skip(ReasonComment)
	}
	f := p.f[:]
	n, _ := splitFields(line, f)
	if n != 5 {
		return reject(ReasonFields, "snapshot line has %d fields, want 5 (object poll_time period last_event event)", n)
	}
	poll, err := anyTime(f[1], p.zone)
	if err != nil {
		return err
	}
	period, err := periodSeconds(f[2])
	if err != nil {
		return err
	}
	var last time.Time
	if !(len(f[3]) == 1 && f[3][0] == '-') {
		if last, err = anyTime(f[3], p.zone); err != nil {
			return err
		}
	}
	var ev records.Event
	switch strings.ToLower(string(f[4])) {
	case "access", "a", "atime":
		ev = records.EventAccess
	case "modification", "m", "mtime":
		ev = records.EventModification
	default:
		return reject(ReasonFields, "snapshot event %q is not access or modification", trunc(f[4]))
	}
	if len(f[0]) > MaxObjectBytes {
		return objectTooLong(len(f[0]))
	}
	obj := validString(f[0])
	if hasHTTPPrefix(f[0]) {
		if obj, _, err = p.canon.Canonical(f[0]); err != nil {
			return err
		}
	}
	*obs = records.Observation{Object: obj, Site: records.SiteOf(obj), Time: poll, Kind: records.KindSnapshot, PeriodS: period,
		LastEvent: last, Event: ev, Format: "snapshot"}
	if err := obs.Validate(); err != nil {
		*obs = records.Observation{}
		return &Error{Reason: ReasonInvalid, Err: err}
	}
	return nil
}

// anyTime parses RFC 3339 (zone required unless zone is set) or Unix
// seconds.
func anyTime(b []byte, zone *time.Location) (time.Time, error) {
	if len(b) > 0 && b[0] >= '0' && b[0] <= '9' && !bytes.ContainsAny(b, "-:T") {
		t, err := epochTime(b)
		if err != nil {
			return time.Time{}, reject(ReasonTime, "time %q: %v", trunc(b), err)
		}
		return t, nil
	}
	t, hasZone, ok := isoTime(b)
	if !ok {
		return time.Time{}, reject(ReasonTime, "time %q is neither RFC 3339 nor Unix seconds", trunc(b))
	}
	if !hasZone {
		if zone == nil {
			return time.Time{}, reject(ReasonNoZone, "time %q has no zone and none is configured", trunc(b))
		}
		t = inZone(t, zone)
	}
	return t, nil
}

func periodSeconds(b []byte) (float64, error) {
	s := string(b)
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if !(v > 0) || v > 1e12 {
			return 0, reject(ReasonNumber, "period %q must be > 0 seconds", trunc(b))
		}
		return v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, reject(ReasonNumber, "period %q is neither seconds nor a positive duration", trunc(b))
	}
	return d.Seconds(), nil
}

// hasHTTPPrefix reports whether b starts with http:// or https://, in any
// case.
func hasHTTPPrefix(b []byte) bool {
	return (len(b) >= 7 && bytes.EqualFold(b[:7], []byte("http://"))) || (len(b) >= 8 && bytes.EqualFold(b[:8], []byte("https://")))
}

func (p *snapshotParser) canonicalizer() *Canonicalizer { return p.canon }
