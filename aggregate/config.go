package aggregate

import (
	"errors"
	"fmt"
	"time"

	"github.com/changerate/changerate/stream"
	"github.com/changerate/changerate/windows"
)

// Emit modes: when estimate records are published.
const (
	// EmitUpdate publishes, after every committed batch, the estimates of
	// the objects the batch changed. The last record per key is the
	// object's current estimate (the estimates topic is compacted).
	EmitUpdate = "update"
	// EmitFinal publishes every object's estimate once, when a finite input
	// is exhausted (the Unix-filter mode).
	EmitFinal = "final"
)

// Config configures a Processor. Start from DefaultConfig and set what
// differs: "unset" is DefaultConfig's value, and a field means what it
// holds. Where 0 is a meaningful setting it is that setting (no bound, no
// wait, off), as each field documents; where 0 is not (BatchSize, Emit,
// the topics, RetryBackoff, DrainTimeout, OnStateLoss), WithDefaults
// reads it as the default. A negative value is invalid.
type Config struct {
	// Model is the estimator, window and reporting configuration.
	Model Model
	// BatchSize is the most messages fetched and committed in one atomic
	// step per partition. A batch is also bounded by the in-flight budget
	// (InflightBytes): to a sixth of it at the footprint per message of the
	// batches before (inflight_budget.go batchLimit), so where every
	// observation publishes an estimate (about 1,250 bytes per message)
	// batches hold at most about 2,200 messages with the default budget,
	// and a history replay (about 85 bytes) is bounded by BatchSize and by
	// what its fetches have returned. Default 20000.
	BatchSize int
	// Emit is EmitUpdate (default) or EmitFinal.
	Emit string
	// CacheObjects bounds the objects kept in memory per partition between
	// batches (a hit avoids a store read). 0 sets no bound, which EmitFinal
	// requires. Default 200000.
	CacheObjects int
	// CacheBytes bounds the memory of the object caches of all the
	// partitions this Processor owns together (each keeps at most its
	// share): cached objects are kept encoded, about 200 bytes each with
	// the cache's bookkeeping (see EntryOverheadBytes). 0 sets no bound,
	// which EmitFinal requires. Default DefaultCacheBytes.
	CacheBytes int64
	// InflightBytes bounds the memory of the batches in flight of all the
	// partitions this Processor owns together, from the fetch of a batch's
	// messages to its commit: the fetched messages and decoded
	// observations while the batch is prepared, then its encoded outputs
	// and states until they are written and committed. A partition waits
	// for budget before it prepares its next batch; a batch larger than
	// the whole budget proceeds alone when no other batch is in flight.
	// 0 sets no bound. Default DefaultInflightBytes.
	InflightBytes int64
	// Topics of the outputs. Defaults: stream.TopicEstimates,
	// stream.TopicAccessReports, stream.TopicAlerts, stream.TopicDeadLetter.
	EstimatesTopic, AccessReportsTopic, AlertsTopic, DeadLetterTopic string
	// MaxFuture bounds how far an observation's event time may lie ahead
	// of the Processor's clock (its now function): a later one is not
	// applied but written as a dead letter with reason ReasonFuture, so
	// that a log line with a wrong clock (a year 2100 typo, a host whose
	// clock is off) cannot stretch its object's history and hold every
	// later observation back as late. The bound is taken once per batch.
	// 0 accepts any time. Default DefaultMaxFuture.
	MaxFuture time.Duration
	// LateTopic receives late observations (older than their object's
	// latest by more than Model.LateTolerance, see reorder.go), as
	// dead-letter records with reason "late". Default TopicLate.
	LateTopic string
	// ReorderWindow is the bounded out-of-orderness of the partitions'
	// reorder buffers (reorder.go): the watermark is the latest event time
	// seen minus ReorderWindow, and observations after it are held until it
	// passes them, then applied in event-time order. It is also how long (in
	// event time) a new observation waits before its estimate is published.
	// An observation that arrives behind the watermark is applied at once,
	// at its object's latest time when it is older (Model.LateTolerance
	// decides whether it is late). 0: no window. Default
	// DefaultReorderWindow.
	ReorderWindow time.Duration
	// IdleRelease: a partition without input for this long releases (and
	// applies) every observation its reorder buffer holds, so that the end
	// of a stream is not held back for ever; the watermark stays where it
	// was, and an observation that arrives later, before released ones but
	// within Model.LateTolerance of its object's latest, is applied at the
	// object's latest time. 0 never releases on idleness.
	// Default 30s.
	IdleRelease time.Duration
	// DisableReorder applies observations in arrival (offset) order without
	// the event-time reorder buffer: nothing is held, and an observation
	// older than its object's latest one by more than Model.LateTolerance is
	// late (written to LateTopic). For inputs known to be sorted and for
	// tests of batch mechanics. Default false.
	DisableReorder bool
	// RetryBackoff is the first wait before retrying a failed output write
	// or state commit; it doubles up to 30s. Default 200ms.
	RetryBackoff time.Duration
	// IdleCheck is how long a partition handler waits for input before it
	// verifies that the store still holds its last commit (see
	// verifyStoredOffset). 0 disables the check. Default 5s.
	IdleCheck time.Duration
	// TakeoverDelay is how long a handler whose Claim was refused (the
	// stored epoch is above its generation) waits before it takes the
	// partition over, unless its generation ends meanwhile. It must exceed
	// the consumer group's heartbeat interval. 0 takes over at once.
	// Default 10s.
	TakeoverDelay time.Duration
	// DrainTimeout bounds how long an in-flight batch may take to write its
	// outputs and commit after the handler's context is cancelled (SIGTERM,
	// revocation); past it the batch is abandoned uncommitted and will be
	// replayed. Default 10s.
	DrainTimeout time.Duration
	// OnStateLoss is what a handler does when the store has no offset for
	// a partition that was processed before (stateloss.go):
	// OnStateLossStop (the default) stops the aggregator with an error,
	// OnStateLossReplay rebuilds the partition from the earliest offset.
	OnStateLoss string
}

// Defaults of Config, in one place (DefaultCacheBytes, DefaultReorderWindow
// and TopicLate are exported where they are used).
const (
	defaultBatchSize     = 20000
	defaultCacheObjects  = 200000
	defaultRetryBackoff  = 200 * time.Millisecond
	defaultDrainTimeout  = 10 * time.Second
	defaultTakeoverDelay = 10 * time.Second
	defaultIdleCheck     = 5 * time.Second
	defaultIdleRelease   = 30 * time.Second
)

// DefaultMaxFuture is Config.MaxFuture's default: a day ahead of the clock
// covers any time zone written as UTC by mistake and any sane clock skew.
const DefaultMaxFuture = 24 * time.Hour

// DefaultConfig returns the documented defaults, the one source of the
// defaults of the fields where 0 is a meaningful setting.
func DefaultConfig() Config {
	return Config{
		Model:         DefaultModel(),
		CacheObjects:  defaultCacheObjects,
		CacheBytes:    DefaultCacheBytes,
		InflightBytes: DefaultInflightBytes,
		ReorderWindow: DefaultReorderWindow,
		IdleRelease:   defaultIdleRelease,
		MaxFuture:     DefaultMaxFuture,
		IdleCheck:     defaultIdleCheck,
		TakeoverDelay: defaultTakeoverDelay,
	}.WithDefaults()
}

// WithDefaults returns c with every zero field where 0 is not a valid
// setting set to its documented default (Model included); the fields
// where 0 means something keep it. WithDefaults is idempotent.
func (c Config) WithDefaults() Config {
	c.Model = c.Model.WithDefaults()
	orDefault(&c.BatchSize, defaultBatchSize)
	orDefault(&c.Emit, EmitUpdate)
	orDefault(&c.EstimatesTopic, stream.TopicEstimates)
	orDefault(&c.AccessReportsTopic, stream.TopicAccessReports)
	orDefault(&c.AlertsTopic, stream.TopicAlerts)
	orDefault(&c.DeadLetterTopic, stream.TopicDeadLetter)
	orDefault(&c.LateTopic, TopicLate)
	orDefault(&c.RetryBackoff, defaultRetryBackoff)
	orDefault(&c.DrainTimeout, defaultDrainTimeout)
	orDefault(&c.OnStateLoss, OnStateLossStop)
	return c
}

// Validate reports every invalid field of c.WithDefaults() at once
// (errors.Join); each error names its field.
func (c Config) Validate() error {
	c = c.WithDefaults()
	errs := []error{c.Model.Validate()}
	add := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf("aggregate: "+format, args...))
		}
	}
	add(c.BatchSize < 1, "BatchSize must be at least 1, got %d", c.BatchSize)
	switch c.Emit {
	case EmitUpdate:
	case EmitFinal:
		add(c.CacheObjects != 0, "Emit %q needs CacheObjects 0 (no bound), got %d", c.Emit, c.CacheObjects)
		add(c.CacheBytes != 0, "Emit %q needs CacheBytes 0 (no bound), got %d", c.Emit, c.CacheBytes)
	default:
		add(true, "Emit must be %q or %q, got %q", EmitUpdate, EmitFinal, c.Emit)
	}
	add(c.CacheObjects < 0, "CacheObjects must be 0 (no bound) or more, got %d", c.CacheObjects)
	add(c.CacheBytes < 0, "CacheBytes must be 0 (no bound) or more, got %d", c.CacheBytes)
	add(c.InflightBytes < 0, "InflightBytes must be 0 (no bound) or more, got %d", c.InflightBytes)
	add(c.ReorderWindow < 0, "ReorderWindow must be 0 or more, got %s", c.ReorderWindow)
	add(c.MaxFuture < 0, "MaxFuture must be 0 (no bound) or more, got %s", c.MaxFuture)
	add(c.IdleRelease < 0, "IdleRelease must be 0 (never) or more, got %s", c.IdleRelease)
	add(c.IdleCheck < 0, "IdleCheck must be 0 (off) or more, got %s", c.IdleCheck)
	add(c.TakeoverDelay < 0, "TakeoverDelay must be 0 or more, got %s", c.TakeoverDelay)
	add(c.DrainTimeout <= 0, "DrainTimeout must be positive, got %s", c.DrainTimeout)
	add(c.RetryBackoff <= 0, "RetryBackoff must be positive, got %s", c.RetryBackoff)
	errs = append(errs, validOnStateLoss(c.OnStateLoss))
	return errors.Join(errs...)
}

// DefaultModel returns the documented defaults, the one source of the
// defaults of the fields where 0 is a meaningful setting.
func DefaultModel() Model {
	return Model{
		LateTolerance: defaultLateTolerance,
		EmitInterval:  defaultEmitInterval,
		Seasonal:      windows.DefaultSeasonalConfig(),
		Alerts:        DefaultAlertConfig(),
	}.WithDefaults()
}

// Defaults of Model.
const (
	defaultLateTolerance = time.Hour
	defaultReportPeriod  = time.Hour
	defaultEmitInterval  = 10 * time.Minute
	defaultPStale        = 0.1
)

// WithDefaults returns m with every zero field where 0 is not a valid
// setting set to its documented default; Estimators, Windows and Seasonal
// get their packages' WithDefaults, field by field.
func (m Model) WithDefaults() Model {
	orDefault(&m.ReportPeriod, defaultReportPeriod)
	orDefault(&m.PStale, defaultPStale)
	m.Estimators = m.Estimators.WithDefaults()
	m.Windows = m.Windows.WithDefaults()
	m.Seasonal = m.Seasonal.WithDefaults()
	m.Alerts = m.Alerts.WithDefaults()
	return m
}

// Validate reports every invalid field of m.WithDefaults() at once
// (errors.Join); each error names its field.
func (m Model) Validate() error {
	m = m.WithDefaults()
	var errs []error
	add := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf("aggregate: "+format, args...))
		}
	}
	add(m.LateTolerance < 0, "LateTolerance must be 0 or more, got %s", m.LateTolerance)
	add(m.EmitInterval < 0, "EmitInterval must be 0 or more, got %s", m.EmitInterval)
	add(m.ReportPeriod < time.Second, "ReportPeriod must be at least 1s, got %s", m.ReportPeriod)
	add(!(m.PStale > 0 && m.PStale < 1), "PStale must be in (0,1), got %g", m.PStale)
	if err := m.Estimators.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("aggregate: estimators: %w", err))
	}
	if err := m.Windows.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("aggregate: windows: %w", err))
	}
	if err := m.Seasonal.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("aggregate: seasonal: %w", err))
	}
	errs = append(errs, m.Alerts.Validate())
	return errors.Join(errs...)
}

// DefaultAlertConfig returns the documented defaults, the one source of
// the defaults of the fields where 0 is a meaningful setting.
func DefaultAlertConfig() AlertConfig {
	return AlertConfig{MinEvents: defaultAlertMinEvents, SiteObjects: defaultAlertSiteObjects}.WithDefaults()
}

// Defaults of AlertConfig.
const (
	defaultAlertPeriod      = time.Hour
	defaultAlertFDR         = 0.01
	defaultAlertMinRatio    = 2
	defaultAlertMinEvents   = 8
	defaultAlertSiteObjects = 3
	defaultAlertSiteTop     = 5
	defaultAlertMaxPending  = 1000
	// defaultStrictTests is the number of tests the strict level is the
	// Bonferroni level of the FDR over: StrictPValue = FDR/10⁴.
	defaultStrictTests = 1e4
)

// WithDefaults returns c with every zero field where 0 is not a valid
// setting set to its documented default (MinEvents and SiteObjects keep
// their 0).
func (c AlertConfig) WithDefaults() AlertConfig {
	orDefault(&c.Period, defaultAlertPeriod)
	orDefault(&c.FDR, defaultAlertFDR)
	orDefault(&c.MinRatio, defaultAlertMinRatio)
	orDefault(&c.SiteTop, defaultAlertSiteTop)
	orDefault(&c.MaxPending, defaultAlertMaxPending)
	orDefault(&c.StrictPValue, c.FDR/defaultStrictTests)
	orDefault(&c.ScanAlarms, c.FDR)
	return c
}

// orDefault sets *v to def if it is the zero value.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
