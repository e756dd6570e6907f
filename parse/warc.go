package parse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/changerate/changerate/records"
)

// RecordReader reads a record-oriented input (WARC) and yields one
// observation per record that carries one.
type RecordReader interface {
	// Format is the format name ("warc").
	Format() string
	// Next reads the next record into obs. It returns nil; a *Error for a
	// record without an observation (IsSkip) or a malformed one (after which
	// the reader has resynchronised on the next record); io.EOF at the end;
	// or another error when the underlying reader failed (the input is
	// unusable from here on). input is the record's header, for dead
	// letters; it is valid until the next call.
	Next(obs *records.Observation) (input []byte, err error)
	// Records is the number of records read so far (including skipped and
	// malformed ones).
	Records() int64
}

// Reasons of the WARC reader.
const (
	ReasonRecordType = "record-type" // skipped: warcinfo, request, metadata, resource, ...
	ReasonTooLarge   = "too-large"   // a record beyond the size cap (skipped over)
)

// NewRecordReader returns a reader of format ("warc") over r. r yields the
// decompressed bytes: a gzip-per-record file decompressed as one
// multistream (the way ingest opens it) reads like a plain WARC file.
// maxRecordBytes caps one record's block (0: 256 MiB); bigger records are
// rejected with reason "too-large" and skipped without being buffered.
func NewRecordReader(format string, r io.Reader, cfg Config, maxRecordBytes int64) (RecordReader, error) {
	if format == "sitemap" {
		return nil, fmt.Errorf("%w: use NewSitemapReader", ErrNoFetchTime)
	}
	if format != "warc" {
		return nil, fmt.Errorf("%w %q (record formats: warc, sitemap)", ErrUnknownFormat, format)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if maxRecordBytes <= 0 {
		maxRecordBytes = 256 << 20
	}
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < warcBufSize {
		br = bufio.NewReaderSize(r, warcBufSize)
	}
	return &warcReader{br: br, canon: NewCanonicalizer(cfg.Profile, cfg.CacheEntries), max: maxRecordBytes}, nil
}

const (
	warcBufSize      = 256 << 10
	warcMaxHeader    = 1 << 20  // all WARC header lines of one record
	warcMaxHTTPHead  = 64 << 10 // HTTP response head parsed from a block
	warcMaxHeaderLen = 64 << 10 // one header line
)

// warcReader is a small WARC reader written for this project.
//
// Why not a library: github.com/nlnwa/gowarc (the maintained Go reader that
// also validates) was not served by the Go module proxy here, nor were
// github.com/slyrz/warc or github.com/internetarchive/gowarc (the latter is
// a crawler's writer with a large dependency tree anyway). The parts of
// WARC we need are small: the version line, named header fields, a block of
// Content-Length bytes, and, for response and revisit records, the HTTP
// status line and Last-Modified of the archived response.
//
// What it accepts: WARC/1.0 and 1.1 (ISO 28500), the WARC/0.17 and
// WARC/0.18 drafts as written by Heritrix 1.x (named fields like 1.0), and
// the positional header line of the earlier drafts ("WARC/0.10 length type
// uri date id mime", fields then optional); LF as well as CRLF line ends;
// header continuation lines; WARC-Date as RFC 3339 (with or without
// fraction) or 14-digit yyyyMMddHHmmss; a target URI in angle brackets
// (some 1.0 writers); any number of blank lines between records. A record
// whose header cannot be read is rejected and the reader skips to the next
// line that starts with "WARC/". The block is skipped by its length, never
// buffered beyond the HTTP head.
//
// What it yields: response records are visits (records.KindVisit) at
// WARC-Date with the payload digest (WARC-Payload-Digest; the block digest
// is not used because it covers the HTTP headers, which differ on every
// fetch), the HTTP status and Last-Modified; revisit records are visits
// with Changed = Unchanged (profiles identical-payload-digest and
// server-not-modified alike), except revisits of a redirect or an error
// page (status 3xx but 304, 4xx, 5xx), whose Changed stays unknown (the
// aggregator counts them as carrying no information, as it does the
// redirect itself). Other record types are skipped with reason
// "record-type".
type warcReader struct {
	br      *bufio.Reader
	canon   *Canonicalizer
	max     int64
	n       int64
	hdr     []byte
	resync  bool
	pending error // an error to return after the current record
}

func (w *warcReader) Format() string { return "warc" }
func (w *warcReader) Records() int64 { return w.n }

type warcHeader struct {
	version      []byte
	typ          []byte
	uri          []byte
	date         []byte
	payload      []byte
	profile      []byte
	contentType  []byte
	length       int64
	lengthSet    bool
	positionalOK bool
}

// readLine returns the next line without its line end. A line longer than
// warcMaxHeaderLen is an error (too-long is a *Error).
func (w *warcReader) readLine() ([]byte, error) {
	line, err := w.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull || (err == nil && len(line) > warcMaxHeaderLen) {
		// Drop the rest of the line.
		for err == bufio.ErrBufferFull {
			_, err = w.br.ReadSlice('\n')
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		return nil, reject(ReasonWARC, "header line longer than %d bytes", warcMaxHeaderLen)
	}
	if err == io.EOF && len(line) > 0 {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	line = bytes.TrimRight(line, "\r\n")
	return line, nil
}

// seekVersion skips blank lines (and, when resynchronising, any line) up to
// a version line.
func (w *warcReader) seekVersion() ([]byte, error) {
	for {
		line, err := w.readLine()
		if err != nil {
			var pe *Error
			if errors.As(err, &pe) {
				w.resync = true
				continue
			}
			return nil, err
		}
		if len(line) == 0 {
			continue
		}
		if bytes.HasPrefix(line, []byte("WARC/")) {
			w.resync = false
			return line, nil
		}
		if !w.resync {
			w.resync = true
			return nil, reject(ReasonWARC, "expected a WARC/ version line, got %q", trunc(line))
		}
	}
}

func (w *warcReader) Next(obs *records.Observation) ([]byte, error) {
	*obs = records.Observation{}
	if w.pending != nil {
		err := w.pending
		w.pending = nil
		return nil, err
	}
	vline, err := w.seekVersion()
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		var pe *Error
		if errors.As(err, &pe) {
			w.n++
			return w.hdr[:0], err
		}
		return nil, err
	}
	w.n++
	w.hdr = append(w.hdr[:0], vline...)
	w.hdr = append(w.hdr, '\n')
	var h warcHeader
	if err := parseVersionLine(vline, &h); err != nil {
		w.resync = true
		return w.hdr, err
	}
	// Named fields up to the blank line, copied into w.hdr (the reader's
	// buffer is overwritten by later reads) and parsed from there.
	for {
		line, err := w.readLine()
		if err == io.EOF {
			return w.hdr, reject(ReasonWARC, "truncated record header")
		}
		if err != nil {
			var pe *Error
			if errors.As(err, &pe) {
				w.resync = true
				return w.hdr, err
			}
			return nil, err
		}
		if len(w.hdr)+len(line) > warcMaxHeader {
			w.resync = true
			return w.hdr, reject(ReasonWARC, "record header longer than %d bytes", warcMaxHeader)
		}
		w.hdr = append(append(w.hdr, line...), '\n')
		if len(line) == 0 {
			break
		}
		if line[0] != ' ' && line[0] != '\t' && bytes.IndexByte(line, ':') <= 0 {
			w.resync = true
			return w.hdr, reject(ReasonWARC, "header line %q is not name: value", trunc(line))
		}
	}
	// The fields were copied into w.hdr; re-slice them from there so they
	// survive the block reads below.
	h = reparse(w.hdr)
	_ = h.positionalOK
	if !h.lengthSet {
		w.resync = true
		return w.hdr, reject(ReasonWARC, "record has no valid Content-Length")
	}
	if h.length > w.max {
		if err := w.skip(h.length); err != nil {
			return w.hdr, err
		}
		return w.hdr, reject(ReasonTooLarge, "record block of %d bytes exceeds the cap of %d", h.length, w.max)
	}
	typ := string(h.typ)
	if typ != "response" && typ != "revisit" {
		if err := w.skip(h.length); err != nil {
			return w.hdr, err
		}
		return w.hdr, skip(ReasonRecordType)
	}
	// The HTTP head of the archived response, if the block holds one.
	status, lastMod := 0, time.Time{}
	if bytes.Contains(h.contentType, []byte("application/http")) || (len(h.contentType) == 0 && typ == "revisit") {
		n := int(min(h.length, warcMaxHTTPHead))
		head, _ := w.br.Peek(n)
		status, lastMod = httpHead(head)
	}
	if err := w.skip(h.length); err != nil {
		return w.hdr, err
	}
	if len(h.uri) == 0 {
		return w.hdr, reject(ReasonWARC, "%s record has no WARC-Target-URI", typ)
	}
	t, ok := warcDate(h.date)
	if !ok {
		return w.hdr, reject(ReasonTime, "WARC-Date %q", trunc(h.date))
	}
	uri := h.uri
	if len(uri) > 1 && uri[0] == '<' && uri[len(uri)-1] == '>' {
		uri = uri[1 : len(uri)-1]
	}
	var obj string
	obj, _, err = w.canon.Canonical(uri) // a dns: object's site is its host (records.SiteOf)
	if err != nil {
		return w.hdr, err
	}
	obs.Object, obs.Site, obs.Time, obs.Kind, obs.Format = obj, records.SiteOf(obj), t, records.KindVisit, "warc"
	obs.Status, obs.LastModified = status, lastMod
	if len(h.payload) > maxDigestBytes {
		*obs = records.Observation{}
		return w.hdr, reject(ReasonWARC, "WARC-Payload-Digest of %d bytes is longer than %d", len(h.payload), maxDigestBytes)
	}
	if len(h.payload) > 0 {
		obs.Digest = validString(h.payload)
	}
	if (typ == "revisit" && !redirectOrError(status)) || status == 304 {
		// A revisit of a redirect or an error page says nothing about the
		// object's content: Changed stays unknown and the aggregator
		// counts it as carrying no information (cdx.go does the same).
		obs.Changed = records.Unchanged
	}
	return w.hdr, nil
}

// skip discards a block of n bytes and the record's trailing line ends.
func (w *warcReader) skip(n int64) error {
	for n > 0 {
		d, err := w.br.Discard(int(min(n, 1<<30)))
		n -= int64(d)
		if err == io.EOF {
			w.pending = io.EOF
			return reject(ReasonWARC, "truncated record block (%d bytes missing)", n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func parseVersionLine(v []byte, h *warcHeader) error {
	f, i := nextField(v, 0)
	h.version = f
	// Positional drafts: WARC/0.x length type uri date id mime.
	length, i := nextField(v, i)
	if len(length) == 0 {
		return nil
	}
	typ, i := nextField(v, i)
	uri, i := nextField(v, i)
	date, i := nextField(v, i)
	_, i = nextField(v, i) // record id
	mime, _ := nextField(v, i)
	n, err := atoi(length)
	if err != nil || n < 0 || len(typ) == 0 {
		return reject(ReasonWARC, "version line %q", trunc(v))
	}
	h.length, h.lengthSet, h.typ, h.uri, h.date, h.contentType, h.positionalOK = n, true, typ, uri, date, mime, true
	return nil
}

// setField records a field. A continuation line (cont) is ignored: the
// fields we read fit on their first line (a folded Content-Type keeps its
// media type there).
func (h *warcHeader) setField(name, value []byte, cont bool) {
	if cont {
		return
	}
	switch {
	case bytes.EqualFold(name, []byte("WARC-Type")):
		h.typ = value
	case bytes.EqualFold(name, []byte("WARC-Target-URI")):
		h.uri = value
	case bytes.EqualFold(name, []byte("WARC-Date")):
		h.date = value
	case bytes.EqualFold(name, []byte("WARC-Payload-Digest")):
		h.payload = value
	case bytes.EqualFold(name, []byte("WARC-Profile")):
		h.profile = value
	case bytes.EqualFold(name, []byte("Content-Type")):
		h.contentType = value
	case bytes.EqualFold(name, []byte("Content-Length")):
		n, err := atoi(value)
		if err != nil || n < 0 {
			h.lengthSet = false
			h.length = 0
			return
		}
		h.length, h.lengthSet = n, true
	}
}

// reparse rebuilds the header fields from the copied header text.
func reparse(hdr []byte) warcHeader {
	var h warcHeader
	lines := bytes.Split(hdr, []byte("\n"))
	if len(lines) == 0 {
		return h
	}
	_ = parseVersionLine(lines[0], &h)
	var last []byte
	for _, line := range lines[1:] {
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last != nil {
				h.setField(last, bytes.TrimSpace(line), true)
			}
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			continue
		}
		last = bytes.TrimSpace(line[:colon])
		h.setField(last, bytes.TrimSpace(line[colon+1:]), false)
	}
	return h
}

// warcDate parses RFC 3339 (optionally fractional) or 14-digit
// yyyyMMddHHmmss (UTC).
func warcDate(b []byte) (time.Time, bool) {
	if len(b) == 14 {
		y, ok1 := digits(b[0:4])
		mo, ok2 := digits(b[4:6])
		d, ok3 := digits(b[6:8])
		hh, ok4 := digits(b[8:10])
		mi, ok5 := digits(b[10:12])
		s, ok6 := digits(b[12:14])
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 {
			return civil(y, time.Month(mo), d, hh, mi, s, 0)
		}
		return time.Time{}, false
	}
	t, hasZone, ok := isoTime(b)
	if !ok {
		return time.Time{}, false
	}
	// A WARC-Date is UTC by definition; a zone-less one is read as UTC.
	_ = hasZone
	return t, true
}

// httpHead extracts the status code and Last-Modified from the start of an
// HTTP response block.
func httpHead(b []byte) (status int, lastMod time.Time) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if e2 := bytes.Index(b, []byte("\n\n")); e2 >= 0 && (end < 0 || e2 < end) {
		end = e2
	}
	if end >= 0 {
		b = b[:end]
	}
	first := true
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		line = bytes.TrimRight(line, "\r")
		if first {
			first = false
			if !bytes.HasPrefix(line, []byte("HTTP/")) {
				return 0, time.Time{}
			}
			_, i := nextField(line, 0)
			code, _ := nextField(line, i)
			if n, err := strconv.Atoi(string(code)); err == nil && n >= 100 && n <= 999 {
				status = n
			}
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon > 0 && bytes.EqualFold(bytes.TrimSpace(line[:colon]), []byte("Last-Modified")) {
			if t, err := http.ParseTime(string(bytes.TrimSpace(line[colon+1:]))); err == nil && t.Year() > 1970 && t.Year() <= 9999 {
				lastMod = t.UTC()
			}
		}
	}
	return status, lastMod
}

func (w *warcReader) canonicalizer() *Canonicalizer { return w.canon }
