package parse

import (
	"bytes"
	"errors"
	"sort"
	"time"

	"github.com/changerate/changerate/records"
)

// Candidate is a format whose parser accepts some of a sample's lines.
type Candidate struct {
	Format string
	// Accepted counts the sample lines the parser turned into an
	// observation; Skipped the lines it recognised as carrying none
	// (comments, headers); Lines the non-blank lines tried.
	Accepted, Skipped, Lines int
	// NeedsZone says that the format's times carry no zone: the lines were
	// accepted only with a zone assumed (UTC), so the user must give one.
	NeedsZone bool
	// Shaped counts the sample lines the parser accepted, skipped or
	// rejected for their content (a time, URL, status, ...) rather than
	// their shape (reasons fields, json, encoding): how close the format
	// comes to lines that it does not accept (Nearest).
	Shaped int
}

// Detect tries every format on the sample lines (the first lines of an
// input) and returns the formats whose parser accepts at least one of
// them, best first (most lines accepted, then fewest rejected; ties by
// name). A format whose times have no zone is tried with cfg.Zone, or UTC
// when cfg has none (Candidate.NeedsZone). WARC is recognised by its
// version line. cfg's other settings (profile, base URL, Squid logformat)
// are used as given.
func Detect(sample [][]byte, cfg Config) []Candidate {
	return candidates(sample, cfg, func(c Candidate) bool { return c.Accepted > 0 })
}

// Nearest returns, for sample lines that Detect finds no format for, the
// formats that come closest: those with lines of their shape (Shaped >
// 0), most first (then fewest rejected, then by name). WARC is not among
// them.
func Nearest(sample [][]byte, cfg Config) []Candidate {
	out := candidates(sample, cfg, func(c Candidate) bool { return c.Shaped > 0 })
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Shaped != out[j].Shaped {
			return out[i].Shaped > out[j].Shaped
		}
		return false // candidates' order: accepted, fewest rejected, name
	})
	return out
}

func candidates(sample [][]byte, cfg Config, keep func(Candidate) bool) []Candidate {
	var out []Candidate
	for _, l := range sample {
		if bytes.HasPrefix(l, []byte("WARC/")) {
			return []Candidate{{Format: "warc", Accepted: 1, Lines: 1}}
		}
		if bytes.Contains(l, []byte("<urlset")) || bytes.Contains(l, []byte("<sitemapindex")) {
			return []Candidate{{Format: "sitemap", Accepted: 1, Lines: 1}}
		}
	}
	zoned := cfg
	if zoned.Zone == nil {
		zoned.Zone = time.UTC
	}
	var obs records.Observation
	for _, f := range Formats() {
		if IsRecordFormat(f[0]) {
			continue
		}
		c := Candidate{Format: f[0]}
		for _, try := range []Config{cfg, zoned} {
			p, err := New(f[0], try)
			if errors.Is(err, ErrNeedsZone) {
				continue // try it with a zone
			}
			if err != nil {
				break
			}
			c = Candidate{Format: f[0], NeedsZone: try.Zone != cfg.Zone}
			noZone := false
			for _, l := range sample {
				if len(bytes.TrimSpace(l)) == 0 {
					continue
				}
				c.Lines++
				err := p.Parse(l, &obs)
				switch {
				case err == nil:
					c.Accepted++
				case IsSkip(err):
					c.Skipped++
				case Reason(err) == ReasonNoZone:
					noZone = true
				}
				if err == nil {
					c.Shaped++
				} else if r := Reason(err); r != ReasonFields && r != ReasonJSON && r != ReasonEncoding && r != ReasonOther {
					c.Shaped++
				}
			}
			if !noZone || cfg.Zone != nil {
				break
			}
		}
		if keep(c) {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri := out[i].Lines - out[i].Accepted - out[i].Skipped
		rj := out[j].Lines - out[j].Accepted - out[j].Skipped
		if out[i].Accepted != out[j].Accepted {
			return out[i].Accepted > out[j].Accepted
		}
		if ri != rj {
			return ri < rj
		}
		return out[i].Format < out[j].Format
	})
	return out
}

// Hint is a one-line suggestion for the user from Detect's candidates,
// e.g. `--format=heritrix (20 of 20 sample lines)`, "" when there are none.
func Hint(cands []Candidate) string {
	if len(cands) == 0 {
		return ""
	}
	var b bytes.Buffer
	for i, c := range cands {
		if i == 3 {
			break
		}
		if i > 0 {
			b.WriteString(", or ")
		}
		b.WriteString("--format=" + c.Format)
		if c.NeedsZone {
			b.WriteString(" --zone=UTC")
		}
		b.WriteString(" (" + itoa(c.Accepted) + " of " + itoa(c.Lines) + " sample lines)")
	}
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d [20]byte
	i := len(d)
	for n > 0 {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return string(d[i:])
}
