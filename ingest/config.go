// Package ingest is the reading pipeline of cmd/ingest: Run reads log
// files (plain or gzip), directories, globs or stdin, parses each line (or
// WARC record) with package parse, and writes observations and dead letters
// to a stream.Sink in batches, keyed by object so that one object always
// lands on one partition; RunSource does the same for lines that arrive as
// messages of a stream.Source (the Heritrix KafkaCrawlLogFeed topic).
//
// Delivery: a batch is written with one Sink.Write call, at most one write
// in flight per input (the next batch is parsed meanwhile), so batches reach
// the sink in order. The position of each input after a batch's last line
// is recorded only after that call returned nil, and written to the
// checkpoint file atomically (see Config.CheckpointInterval). After a
// failed write nothing more is written. A restart with the checkpoint
// resumes at the first line not recorded: nothing is lost; after a clean
// stop (end of input, cancellation, sink failure) nothing is repeated;
// after a crash the lines acknowledged since the last checkpoint write are
// read again, with the same Source and Offset.
//
// Every observation carries its Source and Offset (records.Observation):
// Source is "absolute-path@inode" of the input file (with ".N" after the
// N-th truncation of a followed file) or "kafka:topic/partition", Offset the
// byte offset just after its line in the (decompressed) input, the 1-based
// record number for WARC, or the message offset + 1; offsets grow strictly
// along a source, so the aggregator can drop observations delivered again.
// Stdin has no Source (its offsets mean nothing across runs). A jsonl line
// that already names a source keeps its own.
//
// Bad input never stops ingest: each rejected line is counted (metric
// changerate_ingest_rejects_total{format,reason}) and written, with its
// reason and position ("file:line", "file:record" for WARC,
// "topic/partition@offset"), as a records.DeadLetter to the dead-letter
// topic. Lines without an observation (comments, CONNECT tunnels, WARC
// request records, ...) are counted in changerate_ingest_skipped_total and
// dropped. Other metrics: changerate_ingest_lines_total,
// _observations_total, _bytes_total, _batch_messages, _sink_write_seconds,
// _checkpoints_total, _url_canonicalisations_total{format,path}.
package ingest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/stream"
)

// Defaults of Config.
const (
	DefaultMaxLineBytes         = 1 << 20  // 1 MiB
	DefaultMaxDecompressedBytes = 64 << 30 // 64 GiB per input
	DefaultBatchSize            = 1000
	DefaultPollInterval         = 250 * time.Millisecond
	DefaultProgressInterval     = 10 * time.Second
	DefaultDrainTimeout         = 10 * time.Second
	DefaultCheckpointInterval   = time.Second
	DefaultMaxRecordBytes       = 256 << 20 // 256 MiB per WARC record
	DefaultRetryBackoff         = 200 * time.Millisecond
	DefaultWriteRetryTimeout    = 30 * time.Second
)

// FormatAuto as Config.Format detects the format of each input (see
// Config.Format); FormatUnknown is the format label (metrics, dead letters,
// InputSummary.Format) of an input that no format accepts.
const (
	FormatAuto    = "auto"
	FormatUnknown = "unknown"
)

// ReasonNoFormat rejects the lines of an input whose format was to be
// detected (FormatAuto) and that no format accepts.
const ReasonNoFormat = "no-format"

// ErrConfig is wrapped by every Config.Validate error.
var ErrConfig = errors.New("ingest: invalid config")

// Config configures Run and RunSource. The zero value of every field but
// Format and Paths (required) means its documented default (WithDefaults
// fills them in); Validate lists every problem at once.
type Config struct {
	// Format is the input format (see parse.Formats), or FormatAuto.
	// Required.
	//
	// With FormatAuto each input's format is detected on its own, from its
	// first SampleLines non-blank lines (parse.Detect; stdin's are
	// buffered, not re-read), logged ("format detected", with the input)
	// and reported in InputSummary.Format; a followed file that is empty
	// at first is detected once, when it first has lines. An input that
	// no format accepts is logged as a warning naming it, with the formats
	// closest to it, and each of its lines is rejected with reason
	// ReasonNoFormat (metrics label FormatUnknown); the other inputs are
	// read as usual. An input detected as a format that needs an option
	// that Parse lacks (a zone) fails, naming the option (parse.ErrNeedsZone).
	// The checkpoint records the format of each input with its position,
	// and a resumed input keeps it. RunSource does not detect.
	Format string
	// Paths are the inputs: files, directories (every regular file below,
	// in lexical order, except hidden ones), glob patterns, or "-" for
	// stdin. A file named twice is read once. Required. A glob that
	// matches no file and a directory without one are errors (Inputs).
	Paths []string
	// Parse configures the parsers (zone, canonicalisation profile, ...);
	// its zero value means parse's defaults.
	Parse parse.Config
	// Follow keeps reading plain files after their end, like tail -F: it
	// waits for new lines, reopens a file that was rotated (its path now
	// names another file, after the old one is read to its end) and starts
	// again from the top of a file that was truncated. Files are known by
	// device and inode: a file being read under one followed name is not
	// read again under another (numbered rotation a.log -> a.log.1 with
	// both followed); the directories and globs of Paths are expanded again
	// every 4 PollIntervals and new files read from their start. At start,
	// a file whose checkpointed inode is no longer at its path (rotated
	// while ingest was stopped) is looked for beside it and read on from
	// the checkpoint first; if it is not found the loss is logged (warning)
	// and counted (changerate_ingest_lost_files_total). Gzip files, WARC
	// and stdin are read once. Default false.
	//
	// Limits: a truncation is noticed when the file is found shorter than
	// the read position or the 64 bytes before it changed, so a file
	// truncated and refilled beyond that position with the same bytes
	// there is read on from the old position; lines appended to a rotated
	// file after the next file appeared and the old one was read to its
	// end are read only if a followed name still leads to it.
	Follow bool
	// PollInterval is how often a followed file is checked for new data.
	// Default 250ms.
	PollInterval time.Duration
	// MaxLineBytes caps a line; longer lines are rejected with reason
	// "too-long" (their first bytes go to the dead letter). Default 1 MiB.
	MaxLineBytes int
	// MaxDecompressedBytes caps the decompressed size of one gzip input;
	// beyond it the rest of the input is abandoned with reason "too-large"
	// (one dead letter) and ingest goes on with the next input. A gzip
	// stream that is corrupt or truncated is abandoned the same way with
	// reason "corrupt". Default 64 GiB.
	MaxDecompressedBytes int64
	// MaxRecordBytes caps one WARC record (header and block); larger
	// records are rejected with reason "too-large". Default 256 MiB.
	MaxRecordBytes int64
	// BatchSize is the number of messages per Sink.Write. Default 1000.
	BatchSize int
	// CheckpointPath is the file that keeps each input's position; its
	// directory must exist (Validate). Default "": no checkpoint (every run
	// reads every input from the start).
	CheckpointPath string
	// CheckpointInterval is the least time between two writes of the
	// checkpoint file while reading (each write is an fsync). Positions
	// advance only after the sink acknowledged, and the file is always
	// written at idle points (end of an input, end of a followed file for
	// now) and on shutdown, so a clean restart neither loses nor repeats a
	// line. After a crash, up to CheckpointInterval of acknowledged lines
	// are read again; they carry the same Source and Offset, so the
	// aggregator drops them. A negative value writes after every
	// acknowledged batch (one fsync per batch: several times slower).
	// Default 1s.
	CheckpointInterval time.Duration
	// ObservationsTopic and DeadLetterTopic name the output topics.
	// Defaults stream.TopicObservations and stream.TopicDeadLetter.
	ObservationsTopic string
	DeadLetterTopic   string
	// ProgressInterval is the period of the progress log line (lines/s,
	// observations, rejects). Default 10s; negative disables it.
	ProgressInterval time.Duration
	// DrainTimeout bounds the final flush after the context is cancelled.
	// Default 10s.
	DrainTimeout time.Duration
	// RetryBackoff is the first wait before a failed sink write (Kafka
	// unreachable, a topic missing) is retried; it doubles up to 30s, with
	// jitter. Default 200ms. See DeliverySink.
	RetryBackoff time.Duration
	// WriteRetryTimeout bounds the retries of a failing sink write in a
	// one-shot run (not Follow, not RunSource): the run fails with the
	// write's error after it (the checkpoint keeps the last acknowledged
	// position). In follow mode and for RunSource, a service, failing
	// writes are retried until they succeed or the context ends. Default
	// 30s.
	WriteRetryTimeout time.Duration
}

// WithDefaults returns c with the default of every zero field filled in
// (Parse's included). A negative CheckpointInterval or ProgressInterval is
// kept: it is a setting, not a zero value.
func (c Config) WithDefaults() Config {
	d := c
	d.Parse = d.Parse.WithDefaults()
	if d.PollInterval == 0 {
		d.PollInterval = DefaultPollInterval
	}
	if d.MaxLineBytes == 0 {
		d.MaxLineBytes = DefaultMaxLineBytes
	}
	if d.MaxDecompressedBytes == 0 {
		d.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	if d.MaxRecordBytes == 0 {
		d.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if d.BatchSize == 0 {
		d.BatchSize = DefaultBatchSize
	}
	if d.ObservationsTopic == "" {
		d.ObservationsTopic = stream.TopicObservations
	}
	if d.DeadLetterTopic == "" {
		d.DeadLetterTopic = stream.TopicDeadLetter
	}
	if d.ProgressInterval == 0 {
		d.ProgressInterval = DefaultProgressInterval
	}
	if d.DrainTimeout == 0 {
		d.DrainTimeout = DefaultDrainTimeout
	}
	if d.CheckpointInterval == 0 {
		d.CheckpointInterval = DefaultCheckpointInterval
	}
	if d.RetryBackoff == 0 {
		d.RetryBackoff = DefaultRetryBackoff
	}
	if d.WriteRetryTimeout == 0 {
		d.WriteRetryTimeout = DefaultWriteRetryTimeout
	}
	return d
}

// Validate reports every problem of c (with defaults filled in) at once;
// each error wraps ErrConfig and names its field.
func (c Config) Validate() error {
	d := c.WithDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
	}
	known := d.Format == FormatAuto
	for _, f := range parse.Formats() {
		if f[0] == d.Format {
			known = true
		}
	}
	if !known {
		names := ""
		for i, f := range parse.Formats() {
			if i > 0 {
				names += ", "
			}
			names += f[0]
		}
		bad("Format %q is not one of %s, or %s", d.Format, names, FormatAuto)
	}
	if len(d.Paths) == 0 {
		bad("Paths is empty (give files, directories, globs or -)")
	}
	if err := d.Parse.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: Parse: %w", ErrConfig, err))
	}
	if d.PollInterval < 0 {
		bad("PollInterval %v < 0", d.PollInterval)
	}
	if d.MaxLineBytes < 64 {
		bad("MaxLineBytes %d must be >= 64", d.MaxLineBytes)
	}
	if d.MaxDecompressedBytes < 0 {
		bad("MaxDecompressedBytes %d < 0", d.MaxDecompressedBytes)
	}
	if d.MaxRecordBytes < 0 {
		bad("MaxRecordBytes %d < 0", d.MaxRecordBytes)
	}
	if d.BatchSize < 0 {
		bad("BatchSize %d < 0", d.BatchSize)
	}
	if d.DrainTimeout < 0 {
		bad("DrainTimeout %v < 0", d.DrainTimeout)
	}
	if d.RetryBackoff < 0 {
		bad("RetryBackoff %v < 0", d.RetryBackoff)
	}
	if d.WriteRetryTimeout < 0 {
		bad("WriteRetryTimeout %v < 0", d.WriteRetryTimeout)
	}
	if d.CheckpointPath != "" {
		// Found now, not when the first checkpoint is written, after
		// reading (and writing) observations.
		dir := filepath.Dir(d.CheckpointPath)
		if fi, err := os.Stat(dir); err != nil {
			bad("CheckpointPath %q: its directory: %v", d.CheckpointPath, err)
		} else if !fi.IsDir() {
			bad("CheckpointPath %q: %s is not a directory", d.CheckpointPath, dir)
		}
	}
	stdin := 0
	for _, p := range d.Paths {
		if p == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		bad("Paths names stdin (-) %d times", stdin)
	}
	return errors.Join(errs...)
}
