package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/changerate/changerate/internal/backoff"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// ReasonOutputRejected is the dead-letter reason of an output record that
// the sink refused permanently (stream.ErrRejected): the dead letter takes
// its place, naming the output's topic (as Format), key, size and the
// sink's reason (records.NewRejectedOutput, shared with ingest).
const ReasonOutputRejected = records.ReasonOutputRejected

// maxRejectedShown caps the bytes of a rejected output's key and value
// copied into its dead letter, so that the dead letter stays small.
const maxRejectedShown = records.MaxRejectedShown

// batchPosition locates b's input for dead letters of its outputs:
// "topic/partition@first-last" (inclusive), or "@offset" for one message.
func (w *worker) batchPosition(b *batchWork) string {
	last := b.to - 1
	if b.first == last {
		return w.pos + strconv.FormatInt(last, 10)
	}
	return w.pos + strconv.FormatInt(b.first, 10) + "-" + strconv.FormatInt(last, 10)
}

// writeOutputs writes out to the sink, retrying transient errors if retry
// is set. Outputs the sink rejects permanently (stream.ErrRejected) are
// replaced by dead letters with reason ReasonOutputRejected, located at
// position, which are then written (retried likewise); the other outputs
// were written, so nothing is lost and the batch may be committed. A
// rejected dead letter, whether an input's or a rejected output's, cannot
// be replaced: writeOutputs then returns an error wrapping both
// stream.ErrRejected and stream.ErrFatal, which stops the partition (and
// the Source) rather than skip the record or retry it forever. pub lists
// the estimates among out: those the sink acknowledged are shown to the
// Processor's EstimateIndex once the first Write returned.
func (w *worker) writeOutputs(ctx context.Context, out []stream.Message, pub []PublishedEstimate, position string, retry bool) error {
	p := w.p
	attempt := func(what string, f func() error) error {
		if retry {
			return w.retry(ctx, what, f)
		}
		return f()
	}
	err := attempt("write outputs", func() error {
		t0 := time.Now()
		err := p.sink.Write(ctx, out...)
		p.metrics.sinkLatency.Observe(time.Since(t0).Seconds())
		return err
	})
	var rej *stream.RejectedError
	if !errors.As(err, &rej) {
		if err == nil {
			p.metrics.outputs.Add(float64(len(out)))
			w.published(pub, nil)
		}
		return err
	}
	w.published(pub, rej)
	dls, err := w.replaceRejected(out, rej, position)
	if err != nil {
		return err
	}
	p.metrics.outputs.Add(float64(len(out) - len(dls)))
	err = attempt("write dead letters", func() error { return p.sink.Write(ctx, dls...) })
	if errors.As(err, &rej) {
		for _, r := range rej.Rejected {
			topic := p.cfg.DeadLetterTopic
			if r.Index >= 0 && r.Index < len(dls) {
				topic = dls[r.Index].Topic
			}
			p.metrics.rejected.WithLabelValues(topic, r.Reason).Inc()
		}
		w.log.Error("dead letters of rejected outputs were rejected too; stopping the partition", "dead_letters", len(dls), "err", err)
		return fmt.Errorf("aggregate: %s/%d: writing the dead letters of %d rejected outputs: %w: %w", w.part.Topic, w.part.ID, len(dls), err, stream.ErrFatal)
	}
	if err != nil {
		return fmt.Errorf("aggregate: %s/%d: writing the dead letters of %d rejected outputs: %w", w.part.Topic, w.part.ID, len(dls), err)
	}
	p.metrics.outputs.Add(float64(len(dls)))
	p.metrics.deadLetters.WithLabelValues(ReasonOutputRejected).Add(float64(len(dls)))
	return nil
}

// replaceRejected returns the dead letters replacing the outputs rej
// lists, counting and logging each. It fails (wrapping stream.ErrFatal) if
// a rejected output is itself a dead letter or rej does not index out.
func (w *worker) replaceRejected(out []stream.Message, rej *stream.RejectedError, position string) ([]stream.Message, error) {
	p := w.p
	dls := make([]stream.Message, 0, len(rej.Rejected))
	for _, r := range rej.Rejected {
		if r.Index < 0 || r.Index >= len(out) {
			return nil, fmt.Errorf("aggregate: %s/%d: the sink rejected message %d of a write of %d: %w: %w", w.part.Topic, w.part.ID, r.Index, len(out), rej, stream.ErrFatal)
		}
		m := &out[r.Index]
		p.metrics.rejected.WithLabelValues(m.Topic, r.Reason).Inc()
		key := m.Key
		if len(key) > maxRejectedShown {
			key = key[:maxRejectedShown]
		}
		if m.Topic == p.cfg.DeadLetterTopic {
			w.log.Error("dead letter rejected by the sink; stopping the partition", "key", string(key), "bytes", len(m.Value), "reason", r.Reason, "err", r.Err)
			return nil, fmt.Errorf("aggregate: %s/%d: dead letter %q (%d bytes) rejected by the sink (%s): %w: %w", w.part.Topic, w.part.ID, key, len(m.Value), r.Reason, rej, stream.ErrFatal)
		}
		w.log.Error("output rejected by the sink; writing a dead letter instead", "output_topic", m.Topic, "key", string(key),
			"bytes", len(m.Value), "reason", r.Reason, "position", position, "err", r.Err)
		dl := records.NewRejectedOutput(p.now(), "aggregator", "aggregate", m.Topic, m.Key, m.Value, position, r.Reason, r.Err)
		dls = append(dls, w.encode(p.cfg.DeadLetterTopic, dl.Position, dl))
	}
	return dls, nil
}

// retry runs f until it succeeds, fails with a fencing error or a permanent
// rejection (stream.ErrRejected), or ctx ends.
func (w *worker) retry(ctx context.Context, what string, f func() error) error {
	wait := backoff.New(w.p.cfg.RetryBackoff, 30*time.Second) // exponential with jitter
	return backoff.Retry(ctx, wait, f, func(err error, _ int, d time.Duration) bool {
		if errors.Is(err, state.ErrFenced) || errors.Is(err, state.ErrOffsetMismatch) || errors.Is(err, stream.ErrClosed) ||
			errors.Is(err, stream.ErrRejected) {
			return false
		}
		if ctx.Err() != nil {
			return true // Retry returns ctx.Err()
		}
		w.log.Warn("retrying", "op", what, "err", err, "backoff", d)
		w.p.metrics.retries.WithLabelValues(what).Inc()
		return true
	})
}

// appendEstimates appends to out the change estimate (if change) and the
// access estimate (if access) of object name, those it has, counting them,
// and, with an EstimateIndex, what it reads of them to pub. host is
// Site(name), se its seasonal profile (nil: none).
func (w *worker) appendEstimates(slab *outSlab, out []stream.Message, pub []PublishedEstimate, name, host string, se *siteEntry, obj *Object, change, access bool) ([]stream.Message, []PublishedEstimate) {
	if !change && !access {
		return out, pub
	}
	var site *SiteState
	if se != nil {
		site = PriorView(host, &w.p.cfg.Model, &se.st, &w.siteView)
	}
	if change {
		if rec, ok := obj.changeEstimate(name, host, &w.p.cfg.Model, site, w.rb.latest(), &w.es, &w.rs); ok {
			pub = w.appendPublished(pub, len(out), &rec)
			out = append(out, w.encodeEstimate(slab, w.p.cfg.EstimatesTopic, name, "", &rec))
			w.estChange++
			w.countRated(rec.RatePerS)
		}
	}
	if access {
		if rec, ok := obj.accessEstimate(name, host, &w.p.cfg.Model, site, &w.es, &w.rs); ok {
			pub = w.appendPublished(pub, len(out), &rec)
			out = append(out, w.encodeEstimate(slab, w.p.cfg.EstimatesTopic, name, AccessKeySuffix, &rec))
			w.estAccess++
			w.countRated(rec.RatePerS)
		}
	}
	return out, pub
}

// countEstimates adds the estimates appendEstimates counted in w to the
// Processor's counters (shared by the partitions: added once per batch,
// not per estimate) and resets w's counts.
func (w *worker) countEstimates() {
	if w.estChange > 0 {
		w.p.metrics.estChange.Add(float64(w.estChange))
		w.p.stats.changeEst.Add(int64(w.estChange))
	}
	if w.estAccess > 0 {
		w.p.metrics.estAccess.Add(float64(w.estAccess))
		w.p.stats.accessEst.Add(int64(w.estAccess))
	}
	w.estChange, w.estAccess = 0, 0
}

// appendPublished appends to pub, with an EstimateIndex, what it reads of
// rec, the record of out[i].
func (w *worker) appendPublished(pub []PublishedEstimate, i int, rec *records.Estimate) []PublishedEstimate {
	if w.p.index == nil {
		return pub
	}
	pe := PublishedEstimate{Object: rec.Object, Site: rec.Site, Kind: rec.Kind, AsOf: rec.AsOf, Changes: rec.Changes,
		Estimator: rec.Estimator, Observations: rec.Observations, out: int32(i)}
	if rec.TTLS != nil {
		pe.TTL, pe.HasTTL = *rec.TTLS, true
	}
	if rec.RatePerS != nil {
		pe.Rate, pe.HasRate = *rec.RatePerS, true
	}
	if rec.CI95 != nil {
		pe.CI95, pe.HasCI = *rec.CI95, true
	}
	if rec.NextVisit != nil {
		pe.NextVisit, pe.HasNextVisit = *rec.NextVisit, true
	}
	if rec.PlanEvidence != nil && rec.PlanPrior != nil && rec.PlanOmega != nil {
		pe.PlanEvidence, pe.PlanPrior, pe.PlanOmega, pe.HasPlan = *rec.PlanEvidence, *rec.PlanPrior, *rec.PlanOmega, true
	}
	return append(pub, pe)
}

// emitFinal publishes every cached object's estimates, ordered by name.
// Estimates the sink rejects are replaced by dead letters located at
// "topic/partition@final", as in writeOutputs; write errors are not
// retried.
func (w *worker) emitFinal(ctx context.Context) error {
	names := w.cache.names()
	sort.Strings(names)
	var out []stream.Message
	var pub []PublishedEstimate
	var slab outSlab
	for _, n := range names {
		e, _ := w.cache.entry(n)
		obj, err := w.cache.load(e)
		if err != nil {
			w.corrupt(n, err)
		}
		w.rated, w.ratedAbove0 = false, false
		host := Site(n)
		out, pub = w.appendEstimates(&slab, out, pub, n, host, w.det.sites[host], obj, true, true)
		w.countEstimates()
		if obj != nil && obj.HasChange() && obj.Change.Gone() {
			w.p.stats.finalGone.Add(1)
		}
		w.cache.release(obj)
		w.p.stats.finalObjects.Add(1)
		switch {
		case w.ratedAbove0:
			w.p.stats.finalWithRate.Add(1)
		case w.rated:
			w.p.stats.finalZeroRate.Add(1)
		}
		if len(out) >= 1000 {
			if err := w.writeOutputs(ctx, out, pub, w.pos+"final", false); err != nil {
				return fmt.Errorf("aggregate: final estimates: %w", err)
			}
			clear(out)
			out, pub = out[:0], pub[:0]
			slab.release(w, true)
		}
	}
	if len(out) > 0 {
		if err := w.writeOutputs(ctx, out, pub, w.pos+"final", false); err != nil {
			return fmt.Errorf("aggregate: final estimates: %w", err)
		}
	}
	return nil
}

// encode marshals v as a message. Records are plain data, so Marshal cannot
// fail; a failure is a programming error and panics.
func (w *worker) encode(topic, key string, v any) stream.Message {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("aggregate: marshal %T: %v", v, err))
	}
	return stream.Message{Topic: topic, Key: []byte(key), Value: b}
}

// encodeEstimate is encode for estimates built on w.rs (whose keyed list
// holds their estimators' rates and intervals), with
// records.AppendEstimateJSONKeyed (the same bytes as json.Marshal of the
// record with its maps, without reflection); the key is name
// followed by suffix. Key and value are appended to slab, the batch's
// output bytes, each capped so that appending to one cannot clobber the
// next.
func (w *worker) encodeEstimate(slab *outSlab, topic, name, suffix string, rec *records.Estimate) stream.Message {
	b, ok := records.AppendEstimateJSONKeyed(w.scratch[:0], rec, w.rs.keyed)
	if !ok {
		return w.encode(topic, name+suffix, *w.rs.withMaps(rec))
	}
	w.scratch = b
	buf := slab.reserve(w, len(name)+len(suffix)+len(b))
	start := len(buf)
	buf = append(buf, name...)
	buf = append(buf, suffix...)
	kend := len(buf)
	buf = append(buf, b...)
	slab.cur = buf
	return stream.Message{Topic: topic, Key: buf[start:kend:kend], Value: buf[kend:len(buf):len(buf)]}
}

// outSlab holds a batch's output bytes (estimates' keys and values) in
// chunks of outChunk bytes from the Processor's pool, so that encoding an
// estimate allocates nothing in the steady state. The chunks go back to
// the pool as soon as the sink acknowledged the batch's outputs (the Sink
// contract lets a caller reuse what a successful Write was given); after a
// failed Write they are left to the garbage collector.
type outSlab struct {
	cur  []byte   // the chunk being filled
	full [][]byte // the batch's other chunks
}

// outChunk is the size of a chunk of output bytes.
const outChunk = 32 << 10

// reserve returns the current chunk with room for n more bytes.
func (s *outSlab) reserve(w *worker, n int) []byte {
	if cap(s.cur)-len(s.cur) >= n {
		return s.cur
	}
	if s.cur != nil {
		s.full = append(s.full, s.cur)
	}
	if n > outChunk {
		s.cur = make([]byte, 0, n)
	} else if c, _ := w.p.outChunks.Get().(*[]byte); c != nil {
		s.cur = (*c)[:0]
	} else {
		s.cur = make([]byte, 0, outChunk)
	}
	return s.cur
}

// release hands s's chunks back to the pool if reuse is true, and empties s.
func (s *outSlab) release(w *worker, reuse bool) {
	if reuse {
		for _, c := range append(s.full, s.cur) {
			if cap(c) == outChunk {
				c = c[:0]
				w.p.outChunks.Put(&c)
			}
		}
	}
	clear(s.full)
	s.cur, s.full = nil, s.full[:0]
}
