package parse

import (
	"bytes"

	"github.com/changerate/changerate/records"
)

// Tabular formats of the evaluation data sets (see /work/shared/data).

// nasa-tsv: Indeed's TSV conversion of the NASA-HTTP trace, with a header
// line ("host logname time method url response bytes referer useragent",
// skipped with reason "comment"); time is Unix seconds. Each line is an
// access of BaseURL+url; status 304 is a revalidation with Unchanged, as in
// CLF.
type nasaTSVParser struct {
	canon *Canonicalizer
	base  string
	f     [10][]byte
}

func newNASATSV(cfg Config) (lineParser, error) {
	return &nasaTSVParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries), base: baseOf(cfg)}, nil
}

func (p *nasaTSVParser) Format() string { return "nasa-tsv" }

func splitTabs(b []byte, dst [][]byte) int {
	n := 0
	for n < len(dst) {
		i := bytes.IndexByte(b, '\t')
		if i < 0 {
			dst[n] = b
			return n + 1
		}
		dst[n] = b[:i]
		b = b[i+1:]
		n++
	}
	return n + 1 // more fields than dst holds
}

func (p *nasaTSVParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	if len(bytes.TrimSpace(line)) == 0 {
		return skip(ReasonEmpty)
	}
	if bytes.HasPrefix(line, []byte("host\tlogname\t")) || line[0] == '#' {
		return skip(ReasonComment)
	}
	f := p.f[:]
	n := splitTabs(line, f[:9])
	if n < 7 || n > 9 {
		return reject(ReasonFields, "NASA TSV line has %d fields, want 7 to 9", n)
	}
	t, err := epochTime(f[2])
	if err != nil {
		return reject(ReasonTime, "time %q: %v", trunc(f[2]), err)
	}
	status, err := parseStatus(f[5])
	if err != nil {
		return err
	}
	if len(f[4]) == 0 {
		return skip(ReasonNoObject)
	}
	obj, _, err := p.canon.CanonicalRef(p.base, f[4])
	if err != nil {
		return err
	}
	obs.Object, obs.Site, obs.Time, obs.Status, obs.Format = obj, records.SiteOf(obj), t, status, "nasa-tsv"
	obs.Kind = records.KindAccess
	if status == 304 {
		obs.Kind, obs.Changed = records.KindRevalidation, records.Unchanged
	}
	return nil
}

// worldcup-csv: the WorldCup98 sample, "ClientID,DD/Mon/YYYY,HH:MM:SS,URL,
// Status,Bytes". The times have no zone (the trace documents them as GMT):
// they need Config.Zone (use UTC). A URL containing commas is taken whole
// (everything between the third field and the last two). Accesses, with
// 304 as a revalidation with Unchanged.
type worldCupParser struct {
	canon *Canonicalizer
	base  string
	cfg   Config
	ts    [20]byte
}

func newWorldCupCSV(cfg Config) (lineParser, error) {
	return &worldCupParser{canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries), base: baseOf(cfg), cfg: cfg}, nil
}

func (p *worldCupParser) Format() string { return "worldcup-csv" }

func (p *worldCupParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	if len(bytes.TrimSpace(line)) == 0 {
		return skip(ReasonEmpty)
	}
	if line[0] == '#' {
		return skip(ReasonComment)
	}
	c1 := bytes.IndexByte(line, ',')
	if c1 < 0 {
		return reject(ReasonFields, "WorldCup CSV line has no commas")
	}
	rest := line[c1+1:]
	c2 := bytes.IndexByte(rest, ',')
	if c2 < 0 {
		return reject(ReasonFields, "WorldCup CSV line has 2 fields, want 6")
	}
	date := rest[:c2]
	rest = rest[c2+1:]
	c3 := bytes.IndexByte(rest, ',')
	if c3 < 0 {
		return reject(ReasonFields, "WorldCup CSV line has 3 fields, want 6")
	}
	clock := rest[:c3]
	rest = rest[c3+1:]
	l2 := bytes.LastIndexByte(rest, ',')
	if l2 < 0 {
		return reject(ReasonFields, "WorldCup CSV line has 4 fields, want 6")
	}
	l1 := bytes.LastIndexByte(rest[:l2], ',')
	if l1 < 0 {
		return reject(ReasonFields, "WorldCup CSV line has 5 fields, want 6")
	}
	url, statusF := rest[:l1], rest[l1+1:l2]
	if len(date) != 11 || len(clock) != 8 {
		return reject(ReasonTime, "WorldCup time %q %q", trunc(date), trunc(clock))
	}
	copy(p.ts[:11], date)
	p.ts[11] = ':'
	copy(p.ts[12:], clock)
	w, ok := clfWall(p.ts[:])
	if !ok {
		return reject(ReasonTime, "WorldCup time %q %q", trunc(date), trunc(clock))
	}
	if p.cfg.Zone == nil {
		return reject(ReasonNoZone, "WorldCup times have no zone; configure one (the trace is GMT: UTC)")
	}
	status, err := parseStatus(statusF)
	if err != nil {
		return err
	}
	if len(url) == 0 {
		return skip(ReasonNoObject)
	}
	obj, _, err := p.canon.CanonicalRef(p.base, url)
	if err != nil {
		return err
	}
	obs.Object, obs.Site, obs.Time, obs.Status, obs.Format = obj, records.SiteOf(obj), inZone(w, p.cfg.Zone), status, "worldcup-csv"
	obs.Kind = records.KindAccess
	if status == 304 {
		obs.Kind, obs.Changed = records.KindRevalidation, records.Unchanged
	}
	return nil
}

// changes-tsv: "path<TAB>unix_time" lines (exactly two fields) of true
// change times (the php-doc-en git history): each line is a visit that saw
// a change (records.KindVisit, Changed) at that time, by an observer that
// sees every change. The path is the object (kept as written, not a URL).
type changesTSVParser struct {
	intern map[string]string
}

func newChangesTSV(cfg Config) (lineParser, error) {
	return &changesTSVParser{intern: map[string]string{}}, nil
}

func (p *changesTSVParser) Format() string { return "changes-tsv" }

func (p *changesTSVParser) parse(line []byte, obs *records.Observation) error {
	*obs = records.Observation{}
	if len(bytes.TrimSpace(line)) == 0 {
		return skip(ReasonEmpty)
	}
	if line[0] == '#' {
		return skip(ReasonComment)
	}
	tab := bytes.IndexByte(line, '\t')
	if tab <= 0 {
		return reject(ReasonFields, "changes line has no path<TAB>time")
	}
	if n := bytes.Count(line, []byte{'\t'}) + 1; n != 2 {
		// A path never holds a tab (git quotes such paths): this is
		// another tab-separated format (NASA TSV has 7 to 9 fields).
		return reject(ReasonFields, "changes line has %d fields, want 2 (path<TAB>time)", n)
	}
	t, err := epochTime(line[tab+1:])
	if err != nil {
		return reject(ReasonTime, "time %q: %v", trunc(line[tab+1:]), err)
	}
	path := line[:tab]
	if len(path) > MaxObjectBytes {
		return objectTooLong(len(path))
	}
	obj, ok := p.intern[string(path)]
	if !ok {
		if len(p.intern) >= DefaultCacheEntries {
			clear(p.intern)
		}
		obj = validString(path)
		p.intern[string(path)] = obj
	}
	obs.Object, obs.Time, obs.Kind, obs.Changed, obs.Format = obj, t, records.KindVisit, records.Changed, "changes-tsv"
	return nil
}

func (p *nasaTSVParser) canonicalizer() *Canonicalizer { return p.canon }

func (p *worldCupParser) canonicalizer() *Canonicalizer { return p.canon }
