// Package parse turns one input line (or one WARC record) into one
// records.Observation. There is one parser per input format; all of them
// canonicalise the object's URL with the same Canonicalizer and keep the
// site (host) beside it.
//
// # Contracts
//
// A Parser is not safe for concurrent use (it owns a canonicalisation cache);
// create one per goroutine with New. Parse fills a caller-owned Observation
// (every field; a failed Parse leaves it zero) and, on the hot path of the line formats,
// allocates nothing: numbers and times are parsed from the bytes, and URLs go
// through a bounded intern cache, so a URL seen before costs a map lookup.
// The strings it stores in the Observation are immutable and stay valid after
// the next call.
//
// Parse returns nil, or an error that is a *Error. The Reason of an *Error is a
// short stable code, used as a metric label and in dead-letter records. Errors
// that wrap ErrSkip mark well-formed lines that carry no observation (comments,
// headers, CONNECT tunnels); callers count them but do not dead-letter them.
// Every other error is a rejected line.
//
// All times are returned in UTC. A timestamp without a zone (CLF or
// crawl.log times without an offset, Squid %tl in a custom format, snapshot
// lines without an offset, WorldCup CSV) is rejected with reason "no-zone"
// unless Config.Zone is set, in which case it is read in that zone. Unix
// times carry their zone; WARC-Date is UTC by definition. Years before 1970
// are rejected (reason "time").
package parse

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/changerate/changerate/records"
)

// Parser parses one line of a line-oriented format.
type Parser interface {
	// Format is the format name ("squid", "clf", ...), as given to New.
	Format() string
	// Parse parses line (without its trailing newline) into obs. See the
	// package documentation for the error contract.
	Parse(line []byte, obs *records.Observation) error
}

// ErrSkip is wrapped by errors for well-formed input that carries no
// observation. It is not a rejection.
var ErrSkip = errors.New("parse: no observation")

// ErrUnknownFormat is returned by New for a format it does not know.
var ErrUnknownFormat = errors.New("parse: unknown format")

// ErrNeedsZone is returned by New for a format whose timestamps never
// carry a zone (worldcup-csv) when Config.Zone is nil: every line would be
// rejected with reason "no-zone".
var ErrNeedsZone = errors.New("parse: the format's times carry no zone")

// Error is a rejected (or skipped) line. Reason is a short stable code (a
// metric label); Err says what exactly was wrong.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return "parse: " + e.Reason
	}
	return "parse: " + e.Reason + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Reasons used by the parsers. They are stable: dashboards and alerts use
// them as label values.
const (
	ReasonFields   = "fields"    // wrong number or shape of fields
	ReasonTime     = "time"      // unparsable timestamp
	ReasonNoZone   = "no-zone"   // timestamp without a zone and no Config.Zone
	ReasonURL      = "url"       // URL that the canonicaliser rejects
	ReasonStatus   = "status"    // unparsable status or result code
	ReasonNumber   = "number"    // other unparsable number
	ReasonJSON     = "json"      // malformed JSON
	ReasonInvalid  = "invalid"   // a record that decodes but fails validation
	ReasonEncoding = "encoding"  // not valid UTF-8 where it must be
	ReasonWARC     = "warc"      // malformed WARC record
	ReasonComment  = "comment"   // skipped: comment or header line
	ReasonEmpty    = "empty"     // skipped: blank line
	ReasonConnect  = "connect"   // skipped: CONNECT tunnel (no object URL)
	ReasonNoObject = "no-object" // skipped: a record that names no object
	ReasonDenied   = "denied"    // skipped: a request the proxy refused (Squid *_DENIED*): not an access of the object
	ReasonOther    = "other"     // an error that is not an *Error (see Reason)
)

// RejectReasons are the reasons of the errors that reject a line (not the
// skips), including ReasonOther: the known label values of ingest's
// rejects counter.
var RejectReasons = []string{ReasonFields, ReasonTime, ReasonNoZone, ReasonURL, ReasonStatus, ReasonNumber, ReasonJSON,
	ReasonInvalid, ReasonEncoding, ReasonWARC, ReasonObjectTooLong, ReasonTooLarge, ReasonOther}

func reject(reason string, format string, args ...any) error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

func skip(reason string) error {
	return &Error{Reason: reason, Err: ErrSkip}
}

// Reason returns the reason code of err: the Reason of the first *Error in
// its chain, or "other".
func Reason(err error) string {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return ReasonOther
}

// IsSkip reports whether err marks a line without an observation.
func IsSkip(err error) bool { return errors.Is(err, ErrSkip) }

// Config configures the parsers. The zero value of every field means its
// documented default (WithDefaults fills them in; the parsers accept either
// form); Validate lists every problem at once.
type Config struct {
	// Zone is the time zone of timestamps that carry none. Default nil: such
	// timestamps are rejected with reason "no-zone".
	Zone *time.Location
	// Profile is the URL canonicalisation profile: "changerate" (default),
	// "whatwg" (WHATWG parsing, fragment dropped, nothing else) or
	// "semantic" (nlnwa's aggressive Semantic profile: sorts the query,
	// drops user info, collapses slashes). See NewCanonicalizer.
	Profile string
	// BaseURL resolves request targets that are paths rather than absolute
	// URLs (CLF on an origin server, NASA TSV, WorldCup CSV). Default
	// DefaultBaseURL.
	BaseURL string
	// CacheEntries bounds the URL intern cache of each parser. Default
	// DefaultCacheEntries; negative disables the cache.
	CacheEntries int
	// SquidLogformat describes the fields of a custom Squid access log, as a
	// Squid logformat string ("%ts.%03tu %6tr %>a %Ss/%03>Hs %<st %rm %ru
	// %[un %Sh/%<a %mt") or as a list of field names (see squid.go).
	// Default "": Squid's native "squid" format.
	SquidLogformat string
}

// WithDefaults returns c with the default of every zero field filled in.
// Zone stays nil (timestamps without a zone are rejected) and
// SquidLogformat empty (Squid's native format): those are the defaults.
func (c Config) WithDefaults() Config {
	if c.Profile == "" {
		c.Profile = ProfileChangerate
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.CacheEntries == 0 {
		c.CacheEntries = DefaultCacheEntries
	}
	return c
}

// Validate reports every problem of c (with defaults filled in) at once,
// each naming its field.
func (c Config) Validate() error {
	d := c.WithDefaults()
	var errs []error
	switch d.Profile {
	case ProfileChangerate, ProfileWHATWG, ProfileSemantic:
	default:
		errs = append(errs, fmt.Errorf("parse: Profile: unknown canonicalisation profile %q (want changerate, whatwg or semantic)", d.Profile))
	}
	if _, _, err := NewCanonicalizer(d.Profile, 0).canonicalSlow(d.BaseURL); err != nil {
		errs = append(errs, fmt.Errorf("parse: BaseURL %q: %w", d.BaseURL, err))
	}
	if d.SquidLogformat != "" {
		if _, err := compileSquidFormat(d.SquidLogformat); err != nil {
			errs = append(errs, err) // "parse: squid logformat ..."
		}
	}
	return errors.Join(errs...)
}

type factory struct {
	doc   string
	line  func(cfg Config) (lineParser, error)
	isRec bool
	// needsZone: the format's timestamps never carry a zone, so without
	// Config.Zone every line would be rejected.
	needsZone bool
}

func factories() map[string]factory {
	return map[string]factory{
		"squid":         {doc: "Squid native access.log, or a custom logformat (--squid-logformat)", line: newSquid},
		"heritrix":      {doc: "Heritrix crawl.log (H1 and H3)", line: newHeritrix},
		"jsonl":         {doc: "the project's JSON-lines observation schema", line: newJSONL},
		"clf":           {doc: "Common and Combined Log Format (Apache, nginx), also with a leading vhost", line: newCLF},
		"storelog":      {doc: "Squid store.log", line: newStoreLog},
		"heritrix-json": {doc: "Heritrix KafkaCrawlLogFeed JSON, one message per line", line: newHeritrixJSON},
		"snapshot":      {doc: "snapshot lines of indirect data (Matloff): object poll_time period last_event|- access|modification", line: newSnapshot},
		"nasa-tsv":      {doc: "Indeed's TSV of the NASA-HTTP trace (host logname time method url response bytes ...)", line: newNASATSV},
		"worldcup-csv":  {doc: "WorldCup98 CSV (ClientID,DD/Mon/YYYY,HH:MM:SS,URL,Status,Bytes); needs a zone (UTC)", line: newWorldCupCSV, needsZone: true},
		"changes-tsv":   {doc: "path<TAB>unix-time lines of true change times (git history): a visit that saw a change", line: newChangesTSV},
		"cdx":           {doc: "web archive capture index CDX: CDX11/CDX9 with or without its ' CDX N b a m s k ...' header, the Wayback CDX API's 7 columns", line: newCDX},
		"cdxj":          {doc: "web archive capture index CDXJ (pywb, OutbackCDX): urlkey timestamp {json}", line: newCDXJ},
		"sitemap":       {doc: "sitemap XML or sitemap index (sitemaps.org): <lastmod> as Last-Modified at the fetch time, <changefreq> as the site's claim (read by element, not by line)", isRec: true},
		"warc":          {doc: "WARC 0.17/0.18/1.0/1.1 response and revisit records (read record by record, not by line)", isRec: true},
	}
}

// NeedsZone reports whether format's timestamps never carry a zone, so
// that New refuses it without Config.Zone (ErrNeedsZone).
func NeedsZone(format string) bool { return factories()[format].needsZone }

// Formats lists the known formats, sorted, with a one-line description each.
func Formats() [][2]string {
	f := factories()
	out := make([][2]string, 0, len(f))
	for name, fa := range f {
		out = append(out, [2]string{name, fa.doc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// IsRecordFormat reports whether format is read with NewRecordReader (WARC)
// rather than line by line with New.
func IsRecordFormat(format string) bool {
	fa, ok := factories()[format]
	return ok && fa.isRec
}

// New returns a line parser for format. It fails with ErrUnknownFormat for
// an unknown name or a record format, and with a configuration error if cfg
// is invalid.
func New(format string, cfg Config) (Parser, error) {
	fa, ok := factories()[format]
	if !ok || fa.line == nil {
		names := make([]string, 0)
		for n, f := range factories() {
			if f.line != nil {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w %q (line formats: %s)", ErrUnknownFormat, format, strings.Join(names, ", "))
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if fa.needsZone && cfg.Zone == nil {
		return nil, fmt.Errorf("%w: %s needs Config.Zone", ErrNeedsZone, format)
	}
	p, err := fa.line(cfg)
	if err != nil {
		return nil, err
	}
	return zeroing{p}, nil
}

// lineParser is what each format implements; New wraps it so that a failed
// Parse leaves a zero Observation.
type lineParser interface {
	Format() string
	parse(line []byte, obs *records.Observation) error
}

type zeroing struct{ lineParser }

func (z zeroing) Parse(line []byte, obs *records.Observation) error {
	err := z.parse(line, obs)
	if err != nil {
		*obs = records.Observation{}
	}
	return err
}
