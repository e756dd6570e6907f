package aggregate

import (
	"time"

	"github.com/changerate/changerate/stream"
)

// PublishedEstimate is what an index of the published estimates reads of
// one estimate record: the fields of records.Estimate that rank and plan,
// holding the very values the encoded record carries (the encoder writes
// these float64s and times exactly, so a reader that decodes the record
// gets the same values).
type PublishedEstimate struct {
	// Object is the record's "object": the object's name, a string the
	// processor shares (never modified; an index may keep it).
	Object string
	// Site is the record's "site" ("" when the record has none).
	Site string
	// Kind is records.EstimateChange or records.EstimateAccess.
	Kind string
	// AsOf is the record's "as_of".
	AsOf time.Time
	// NextVisit is the record's "next_visit", when HasNextVisit.
	NextVisit time.Time
	// Rate is the record's "rate_per_s", when HasRate.
	Rate float64
	// CI95 is the record's "ci95", when HasCI.
	CI95                         [2]float64
	HasRate, HasCI, HasNextVisit bool
	// Changes is the record's "changes" (change estimates: the changes
	// detected in the object's current window).
	Changes int64
	// Estimator, Observations and TTL (when HasTTL) are the record's
	// "estimator", "observations" and "ttl_s".
	Estimator    string
	Observations int64
	TTL          float64
	HasTTL       bool
	// PlanEvidence, PlanPrior and PlanOmega are the record's
	// "plan_evidence", "plan_prior" and "plan_omega", when HasPlan.
	PlanEvidence, PlanPrior [2]float64
	PlanOmega               float64
	HasPlan                 bool

	out int32 // index of the record among the outputs of its write
}

// EstimateIndex is told of the estimate records a Processor published,
// without decoding them: each call lists, in publication order, the
// estimates of one write of outputs that the sink acknowledged (an output
// the sink rejected, replaced by a dead letter, is left out), after the
// sink's Write returned. Calls come from the goroutines writing the
// partitions' outputs, concurrently for different partitions; an
// implementation must not keep ests (the slice is reused) but may keep
// the strings of its elements.
type EstimateIndex interface {
	IndexEstimates(ests []PublishedEstimate)
}

// Option is an optional dependency of NewProcessor.
type Option func(*Processor)

// WithEstimateIndex makes the Processor tell idx of every estimate it
// publishes (see EstimateIndex).
func WithEstimateIndex(idx EstimateIndex) Option {
	return func(p *Processor) { p.index = idx }
}

// published tells the Processor's EstimateIndex of pub, the estimates of a
// write of outputs, leaving out those whose outputs rej lists (nil: none).
func (w *worker) published(pub []PublishedEstimate, rej *stream.RejectedError) {
	idx := w.p.index
	if idx == nil || len(pub) == 0 {
		return
	}
	if rej != nil && len(rej.Rejected) > 0 {
		skip := make(map[int32]bool, len(rej.Rejected))
		for _, r := range rej.Rejected {
			skip[int32(r.Index)] = true
		}
		kept := make([]PublishedEstimate, 0, len(pub))
		for i := range pub {
			if !skip[pub[i].out] {
				kept = append(kept, pub[i])
			}
		}
		pub = kept
	}
	if len(pub) > 0 {
		idx.IndexEstimates(pub)
	}
}
