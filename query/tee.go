package query

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// TeeSink is a stream.Sink that writes to another sink and then shows the
// estimate and alert records it acknowledged to an Index: the small seam
// through which the aggregator feeds the query API without any change to
// its processor. Records are observed after the inner Write returned (nil,
// or a *stream.RejectedError for the others), so the index holds only what
// the outputs hold. A replayed batch re-publishes byte-identical records,
// which the index absorbs (estimates by key; alerts are kept as published,
// duplicates included, as a consumer of the alerts topic would see them).
type TeeSink struct {
	inner     stream.Sink
	idx       *Index
	estimates string
	alerts    string
	log       *slog.Logger
}

// NewTeeSink returns a TeeSink writing to inner and indexing the records of
// the estimates and alerts topics into idx. An empty topic indexes none of
// those records, as for a Processor that hands its estimates to idx
// itself (aggregate.WithEstimateIndex) and writes through the TeeSink for
// its alerts.
func NewTeeSink(inner stream.Sink, idx *Index, estimatesTopic, alertsTopic string, logger *slog.Logger) *TeeSink {
	return &TeeSink{inner: inner, idx: idx, estimates: estimatesTopic, alerts: alertsTopic, log: logger}
}

// Write implements stream.Sink.
func (t *TeeSink) Write(ctx context.Context, msgs ...stream.Message) error {
	err := t.inner.Write(ctx, msgs...)
	var rejected map[int]bool
	if err != nil {
		var rej *stream.RejectedError
		if !errors.As(err, &rej) {
			return err
		}
		rejected = make(map[int]bool, len(rej.Rejected))
		for _, r := range rej.Rejected {
			rejected[r.Index] = true
		}
	}
	t.Observe(msgs, rejected)
	return err
}

// Observe indexes the estimate and alert records among msgs, except those
// whose index is in skip.
func (t *TeeSink) Observe(msgs []stream.Message, skip map[int]bool) {
	for i := range msgs {
		m := &msgs[i]
		if skip[i] || m.Topic == "" || (m.Topic != t.estimates && m.Topic != t.alerts) {
			continue
		}
		if m.Topic == t.estimates {
			ie, err := records.DecodeEstimateHead(m.Value)
			if err != nil {
				t.log.Warn("query: cannot index estimate", "key", string(m.Key), "err", err)
				continue
			}
			rec := records.Estimate{Object: ie.Object, Site: ie.Site, Kind: ie.Kind, AsOf: ie.AsOf,
				RatePerS: ie.RatePerS, CI95: ie.CI95, NextVisit: ie.NextVisit, Changes: ie.Changes,
				Estimator: ie.Estimator, Observations: ie.Observations, TTLS: ie.TTLS,
				PlanEvidence: ie.PlanEvidence, PlanPrior: ie.PlanPrior, PlanOmega: ie.PlanOmega}
			t.idx.AddEstimate(&rec)
			continue
		}
		var a records.Alert
		if err := json.Unmarshal(m.Value, &a); err != nil {
			t.log.Warn("query: cannot index alert", "key", string(m.Key), "err", err)
			continue
		}
		t.idx.AddAlert(&a, m.Value)
	}
}

// Close closes the inner sink.
func (t *TeeSink) Close() error { return t.inner.Close() }
