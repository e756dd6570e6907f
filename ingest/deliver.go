package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/internal/backoff"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// ReasonOutputRejected is the reason of the dead letter that replaces a
// message the sink refused permanently (records.ReasonOutputRejected, as in
// the aggregator).
const ReasonOutputRejected = records.ReasonOutputRejected

// maxRetryWait caps the wait between two attempts of a failing write.
const maxRetryWait = 30 * time.Second

// DeliverySink is the sink ingest writes through (Run wraps its sink in
// one unless it is a DeliverySink or a SortingSink, whose next sink should
// be one). Its Write returns nil once every message, or the dead letter
// replacing it, was acknowledged:
//
//   - A write that fails transiently (Kafka unreachable, a topic missing,
//     a timeout) is retried with backoff (Config.RetryBackoff doubling up
//     to 30s, with jitter), the same messages again: in follow mode
//     (Config.Follow) and for RunSource, until it succeeds or ctx ends; in
//     a one-shot run, for up to Config.WriteRetryTimeout, then the error is
//     returned. A missing topic fails a one-shot run at once, with the
//     remedy. The first failure of a streak is logged as a warning, the
//     recovery at info; each retry counts in
//     changerate_ingest_write_retries_total.
//   - A message the sink refuses permanently (stream.ErrRejected, e.g.
//     larger than the topic's max.message.bytes) is replaced, as in the
//     aggregator, by a dead letter with reason output_rejected
//     (records.NewRejectedOutput: the topic, key, size and the sink's
//     reason, the first 1024 bytes of the value; key and position
//     "source#offset" of the observation), counted in
//     changerate_ingest_rejects_total{reason="output_rejected"}; if a dead
//     letter is refused, Write fails (ingest stops) instead.
//
// It counts the observations acknowledged (Written,
// changerate_ingest_observations_total). Safe for concurrent use.
type DeliverySink struct {
	next             stream.Sink
	obsTopic, dlT    string
	format           string
	initial, timeout time.Duration
	forever          atomic.Bool
	log              *slog.Logger
	m                *metrics
	mObs             prometheus.Counter

	written, rejected atomic.Int64
}

var _ stream.Sink = (*DeliverySink)(nil)

// NewDeliverySink returns a DeliverySink writing to next with the topics,
// format, follow mode and retry settings of cfg; its metrics are
// registered on reg (nil: none, or shared with Run's on the same registry).
func NewDeliverySink(next stream.Sink, cfg Config, logger *slog.Logger, reg prometheus.Registerer) *DeliverySink {
	c := cfg.WithDefaults()
	return newDeliverySink(next, c, logger, newMetrics(reg, c.Format))
}

func newDeliverySink(next stream.Sink, c Config, logger *slog.Logger, m *metrics) *DeliverySink {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &DeliverySink{next: next, obsTopic: c.ObservationsTopic, dlT: c.DeadLetterTopic, format: c.Format,
		initial: c.RetryBackoff, timeout: c.WriteRetryTimeout, log: logger, m: m}
	if c.Format != FormatAuto {
		s.mObs = m.observations.WithLabelValues(c.Format)
	}
	s.forever.Store(c.Follow)
	return s
}

// retryForever makes failing writes retried until they succeed (RunSource:
// a source is endless, like follow mode).
func (s *DeliverySink) retryForever() { s.forever.Store(true) }

// Written returns the number of observations the next sink acknowledged.
func (s *DeliverySink) Written() int64 { return s.written.Load() }

// Rejected returns the number of messages the next sink refused
// permanently, each replaced by a dead letter.
func (s *DeliverySink) Rejected() int64 { return s.rejected.Load() }

// Close closes nothing: the next sink belongs to the caller.
func (s *DeliverySink) Close() error { return nil }

// Write writes msgs to the next sink; see DeliverySink.
func (s *DeliverySink) Write(ctx context.Context, msgs ...stream.Message) error {
	err := s.retry(ctx, msgs)
	var rej *stream.RejectedError
	if !errors.As(err, &rej) {
		if err == nil {
			s.countWritten(ctx, msgs, nil)
		}
		return err
	}
	dls, err := s.replace(ctx, msgs, rej)
	if err != nil {
		return err
	}
	s.countWritten(ctx, msgs, rej)
	err = s.retry(ctx, dls)
	if errors.As(err, &rej) {
		s.log.Error("ingest: the dead letters of rejected messages were rejected too; stopping", "dead_letters", len(dls), "err", err)
		return fmt.Errorf("ingest: writing the dead letters of %d rejected messages to topic %s: %w", len(dls), s.dlT, err)
	}
	if err != nil {
		return fmt.Errorf("ingest: writing the dead letters of %d rejected messages: %w", len(dls), err)
	}
	return nil
}

// countWritten counts the observations of msgs that rej (nil: none) does
// not list.
func (s *DeliverySink) countWritten(ctx context.Context, msgs []stream.Message, rej *stream.RejectedError) {
	var refused map[int]bool
	if rej != nil {
		refused = make(map[int]bool, len(rej.Rejected))
		for _, r := range rej.Rejected {
			refused[r.Index] = true
		}
	}
	n := 0
	for i := range msgs {
		if msgs[i].Topic != s.obsTopic || refused[i] {
			continue
		}
		n++
		if s.format == FormatAuto {
			s.m.observations.WithLabelValues(s.label(ctx, &msgs[i])).Inc()
		}
	}
	s.written.Add(int64(n))
	if s.format != FormatAuto {
		s.mObs.Add(float64(n))
	}
}

// formatKey is the context key of the format of the messages of a write
// (withFormat).
type formatKey struct{}

// withFormat returns ctx carrying format, the format of the input every
// message of a write comes from (FormatAuto: Run's workers tell the
// DeliverySink under them what to count the observations as).
func withFormat(ctx context.Context, format string) context.Context {
	return context.WithValue(ctx, formatKey{}, format)
}

// label is the format label of message m: its write's format (withFormat)
// when Config.Format is FormatAuto; else, when its write mixes inputs (a
// SortingSink's), the format the observation names if it is one
// (an observation of a jsonl file that names another format counts as
// that one), else FormatUnknown.
func (s *DeliverySink) label(ctx context.Context, m *stream.Message) string {
	if s.format != FormatAuto {
		return s.format
	}
	if f, ok := ctx.Value(formatKey{}).(string); ok && f != "" {
		return f
	}
	if m.Topic == s.obsTopic {
		if f := observationFormat(m.Value); f != "" {
			return f
		}
	}
	return FormatUnknown
}

// observationFormat returns the "format" of an observation encoded by
// AppendObservation if it is a known format, else "". The key cannot occur
// inside a string value, whose quotes are escaped.
func observationFormat(v []byte) string {
	const key = `,"format":"`
	i := bytes.Index(v, []byte(key))
	if i < 0 {
		return ""
	}
	rest := v[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	f := string(rest[:j])
	for _, k := range parse.Formats() {
		if k[0] == f {
			return k[0]
		}
	}
	return ""
}

// replace returns the dead letters replacing the messages rej lists,
// counting and logging each; it fails if one of them is a dead letter or
// rej does not index msgs.
func (s *DeliverySink) replace(ctx context.Context, msgs []stream.Message, rej *stream.RejectedError) ([]stream.Message, error) {
	dls := make([]stream.Message, 0, len(rej.Rejected))
	now := time.Now()
	for _, r := range rej.Rejected {
		if r.Index < 0 || r.Index >= len(msgs) {
			return nil, fmt.Errorf("ingest: the sink rejected message %d of a write of %d: %w", r.Index, len(msgs), rej)
		}
		m := &msgs[r.Index]
		key := m.Key
		if len(key) > records.MaxRejectedShown {
			key = key[:records.MaxRejectedShown]
		}
		if m.Topic == s.dlT {
			s.log.Error("ingest: dead letter rejected by the sink; stopping", "key", string(key), "bytes", len(m.Value), "reason", r.Reason, "err", r.Err)
			return nil, fmt.Errorf("ingest: dead letter %q (%d bytes) rejected by topic %s (%s); it cannot be replaced: %w", key, len(m.Value), m.Topic, r.Reason, rej)
		}
		pos := s.position(m)
		s.log.Error("ingest: message rejected by the sink; writing a dead letter instead", "topic", m.Topic, "key", string(key),
			"bytes", len(m.Value), "reason", r.Reason, "position", pos, "err", r.Err)
		dl := records.NewRejectedOutput(now, "ingest", "ingest", m.Topic, m.Key, m.Value, pos, r.Reason, r.Err)
		v, err := json.Marshal(dl)
		if err != nil {
			return nil, fmt.Errorf("ingest: encode dead letter: %w", err)
		}
		dls = append(dls, stream.Message{Topic: s.dlT, Key: []byte(pos), Value: v})
		s.rejected.Add(1)
		s.m.rejects.WithLabelValues(s.label(ctx, m), ReasonOutputRejected).Inc()
	}
	return dls, nil
}

// position locates a rejected message: "source#offset" of an observation
// (its Source, "stdin" for none, and Offset), else its key.
func (s *DeliverySink) position(m *stream.Message) string {
	if m.Topic == s.obsTopic {
		if o, err := records.DecodeObservation(m.Value); err == nil {
			src := o.Source
			if src == "" {
				src = "stdin"
			}
			return src + "#" + strconv.FormatInt(o.Offset, 10)
		}
	}
	return string(m.Key)
}

// retry writes msgs to the next sink, retrying transient failures; see
// DeliverySink.
func (s *DeliverySink) retry(ctx context.Context, msgs []stream.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	start := time.Now()
	attempts, unknown := 0, false
	forever := s.forever.Load()
	schedule := backoff.New(s.initial, maxRetryWait)
	if !forever {
		// The last attempt is made when WriteRetryTimeout has passed, not
		// before it because the next wait would pass it.
		schedule.Until(start.Add(s.timeout))
	}
	err := backoff.Retry(ctx, schedule, func() error {
		attempts++
		return s.next.Write(ctx, msgs...)
	}, func(err error, attempt int, d time.Duration) bool {
		if errors.Is(err, stream.ErrRejected) || errors.Is(err, stream.ErrClosed) || ctx.Err() != nil {
			return false
		}
		unknown = stream.IsUnknownTopic(err)
		if !forever && (unknown || time.Since(start) >= s.timeout) {
			return false
		}
		s.m.writeRetries.Inc()
		if attempt > 1 {
			s.log.Debug("ingest: sink write failed again; retrying", "attempt", attempt, "err", err, "backoff", d)
			return true
		}
		until := "until it succeeds"
		if !forever {
			until = "for up to " + s.timeout.String()
		}
		if unknown {
			s.log.Warn("ingest: "+s.missingTopic(msgs)+"; waiting for it, retrying with backoff "+until, "err", err, "backoff", d)
		} else {
			s.log.Warn("ingest: sink write failed; retrying with backoff "+until, "messages", len(msgs), "err", err, "backoff", d)
		}
		return true
	})
	switch {
	case err == nil:
		if attempts > 1 {
			s.log.Info("ingest: sink write succeeded again", "attempts", attempts, "failing_for", time.Since(start).Round(time.Millisecond).String())
		}
		return nil
	case errors.Is(err, stream.ErrRejected) || ctx.Err() != nil:
		return err
	case unknown:
		return fmt.Errorf("ingest: %s: %w", s.missingTopic(msgs), err)
	case attempts > 1:
		return fmt.Errorf("ingest: sink write still failing after %d attempts in %v (a one-shot run retries for WRITE_RETRY_TIMEOUT, %v): %w",
			attempts, time.Since(start).Round(time.Millisecond), s.timeout, err)
	}
	return err
}

// missingTopic explains a write to a topic that does not exist, naming
// the topics written to and the remedy.
func (s *DeliverySink) missingTopic(msgs []stream.Message) string {
	var topics []string
	for i := range msgs {
		if !slices.Contains(topics, msgs[i].Topic) {
			topics = append(topics, msgs[i].Topic)
		}
	}
	what := "topic " + topics[0] + " does not exist"
	if len(topics) > 1 {
		what = "a topic of " + strings.Join(topics, ", ") + " does not exist"
	}
	return what + ": start the aggregator with CREATE_TOPICS=true (the default) first, or create the topic"
}
