package aggregate

import (
	"errors"
	"fmt"
	"time"

	"github.com/changerate/changerate/stream"
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

// Sentinels of the configuration fields whose zero value means the default
// but for which zero is also a meaningful setting. Any other negative value
// is invalid.
const (
	// Unbounded, as Config.CacheObjects, CacheBytes, InflightBytes or
	// MaxFuture, sets no bound.
	Unbounded = -1
	// ZeroDuration, as a duration field that documents it, means a
	// duration of 0 (for example IdleCheck: no idle check).
	ZeroDuration time.Duration = -1
	// ZeroCount, as an integer field that documents it, means 0 (for
	// example AlertConfig.SiteObjects: no site alerts).
	ZeroCount = -1
)

// Config configures a Processor. The zero value of every field means its
// documented default (WithDefaults fills them in); where 0 is also a
// meaningful setting, a sentinel (Unbounded, ZeroDuration) selects it.
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
	// batches (a hit avoids a store read). Unbounded sets no bound, which
	// EmitFinal requires. Default 200000.
	CacheObjects int
	// CacheBytes bounds the memory of the object caches of all the
	// partitions this Processor owns together (each keeps at most its
	// share): cached objects are kept encoded, about 200 bytes each with
	// the cache's bookkeeping (see EntryOverheadBytes). Unbounded sets no
	// bound, which EmitFinal requires. Default DefaultCacheBytes.
	CacheBytes int64
	// InflightBytes bounds the memory of the batches in flight of all the
	// partitions this Processor owns together, from the fetch of a batch's
	// messages to its commit: the fetched messages and decoded
	// observations while the batch is prepared, then its encoded outputs
	// and states until they are written and committed. A partition waits
	// for budget before it prepares its next batch; a batch larger than
	// the whole budget proceeds alone when no other batch is in flight.
	// Unbounded sets no bound. Default DefaultInflightBytes.
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
	// Unbounded accepts any time. Default DefaultMaxFuture.
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
	// decides whether it is late). ZeroDuration: a window of 0. Default
	// DefaultReorderWindow.
	ReorderWindow time.Duration
	// IdleRelease: a partition without input for this long releases (and
	// applies) every observation its reorder buffer holds, so that the end
	// of a stream is not held back for ever; the watermark stays where it
	// was, and an observation that arrives later, before released ones but
	// within Model.LateTolerance of its object's latest, is applied at the
	// object's latest time. ZeroDuration never releases on idleness.
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
	// verifyStoredOffset). ZeroDuration disables the check. Default 5s.
	IdleCheck time.Duration
	// TakeoverDelay is how long a handler whose Claim was refused (the
	// stored epoch is above its generation) waits before it takes the
	// partition over, unless its generation ends meanwhile. It must exceed
	// the consumer group's heartbeat interval. ZeroDuration takes over at
	// once. Default 10s.
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

// DefaultConfig returns the documented defaults: Config{}.WithDefaults().
func DefaultConfig() Config { return Config{}.WithDefaults() }

// WithDefaults returns c with every zero field set to its documented
// default (Model included). Sentinels are kept; WithDefaults is idempotent.
func (c Config) WithDefaults() Config {
	c.Model = c.Model.WithDefaults()
	orDefault(&c.BatchSize, defaultBatchSize)
	orDefault(&c.Emit, EmitUpdate)
	orDefault(&c.CacheObjects, defaultCacheObjects)
	orDefault(&c.CacheBytes, DefaultCacheBytes)
	orDefault(&c.InflightBytes, DefaultInflightBytes)
	orDefault(&c.EstimatesTopic, stream.TopicEstimates)
	orDefault(&c.AccessReportsTopic, stream.TopicAccessReports)
	orDefault(&c.AlertsTopic, stream.TopicAlerts)
	orDefault(&c.DeadLetterTopic, stream.TopicDeadLetter)
	orDefault(&c.LateTopic, TopicLate)
	orDefault(&c.ReorderWindow, DefaultReorderWindow)
	orDefault(&c.IdleRelease, defaultIdleRelease)
	orDefault(&c.MaxFuture, DefaultMaxFuture)
	orDefault(&c.RetryBackoff, defaultRetryBackoff)
	orDefault(&c.IdleCheck, defaultIdleCheck)
	orDefault(&c.TakeoverDelay, defaultTakeoverDelay)
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
		add(c.CacheObjects != Unbounded, "Emit %q needs CacheObjects Unbounded, got %d", c.Emit, c.CacheObjects)
		add(c.CacheBytes != Unbounded, "Emit %q needs CacheBytes Unbounded, got %d", c.Emit, c.CacheBytes)
	default:
		add(true, "Emit must be %q or %q, got %q", EmitUpdate, EmitFinal, c.Emit)
	}
	add(c.CacheObjects < Unbounded, "CacheObjects must be positive or Unbounded, got %d", c.CacheObjects)
	add(c.CacheBytes < Unbounded, "CacheBytes must be positive or Unbounded, got %d", c.CacheBytes)
	add(c.InflightBytes < Unbounded, "InflightBytes must be positive or Unbounded, got %d", c.InflightBytes)
	add(c.ReorderWindow < ZeroDuration, "ReorderWindow must be positive or ZeroDuration, got %s", c.ReorderWindow)
	add(c.MaxFuture < Unbounded, "MaxFuture must be positive or Unbounded, got %s", c.MaxFuture)
	add(c.IdleRelease < ZeroDuration, "IdleRelease must be positive or ZeroDuration, got %s", c.IdleRelease)
	add(c.IdleCheck < ZeroDuration, "IdleCheck must be positive or ZeroDuration, got %s", c.IdleCheck)
	add(c.TakeoverDelay < ZeroDuration, "TakeoverDelay must be positive or ZeroDuration, got %s", c.TakeoverDelay)
	add(c.DrainTimeout <= 0, "DrainTimeout must be positive, got %s", c.DrainTimeout)
	add(c.RetryBackoff <= 0, "RetryBackoff must be positive, got %s", c.RetryBackoff)
	errs = append(errs, validOnStateLoss(c.OnStateLoss))
	return errors.Join(errs...)
}

// effective returns c (with defaults) with the sentinels replaced by the
// values they stand for (0), the form the Processor works with.
func (c Config) effective() Config {
	c = c.WithDefaults()
	c.Model = c.Model.effective()
	sentinelToZero(&c.CacheObjects, Unbounded)
	sentinelToZero(&c.CacheBytes, Unbounded)
	sentinelToZero(&c.InflightBytes, Unbounded)
	sentinelToZero(&c.ReorderWindow, ZeroDuration)
	sentinelToZero(&c.IdleRelease, ZeroDuration)
	sentinelToZero(&c.MaxFuture, Unbounded)
	sentinelToZero(&c.IdleCheck, ZeroDuration)
	sentinelToZero(&c.TakeoverDelay, ZeroDuration)
	return c
}

// DefaultModel returns the documented defaults: Model{}.WithDefaults().
func DefaultModel() Model { return Model{}.WithDefaults() }

// Defaults of Model.
const (
	defaultLateTolerance = time.Hour
	defaultReportPeriod  = time.Hour
	defaultEmitInterval  = 10 * time.Minute
	defaultPStale        = 0.1
)

// WithDefaults returns m with every zero field set to its documented
// default; Estimators, Windows and Seasonal get their packages'
// WithDefaults, field by field.
func (m Model) WithDefaults() Model {
	orDefault(&m.LateTolerance, defaultLateTolerance)
	orDefault(&m.ReportPeriod, defaultReportPeriod)
	orDefault(&m.EmitInterval, defaultEmitInterval)
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
	add(m.LateTolerance < ZeroDuration, "LateTolerance must be positive or ZeroDuration, got %s", m.LateTolerance)
	add(m.EmitInterval < ZeroDuration, "EmitInterval must be positive or ZeroDuration, got %s", m.EmitInterval)
	add(m.ReportPeriod < time.Second, "ReportPeriod must be at least 1s, got %s", m.ReportPeriod)
	add(m.PoolSites < 0, "PoolSites must not be negative, got %d", m.PoolSites)
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

// effective returns m (with defaults) with the sentinels replaced by 0.
func (m Model) effective() Model {
	m = m.WithDefaults()
	sentinelToZero(&m.LateTolerance, ZeroDuration)
	sentinelToZero(&m.EmitInterval, ZeroDuration)
	m.Alerts = m.Alerts.effective()
	return m
}

// DefaultAlertConfig returns the documented defaults:
// AlertConfig{}.WithDefaults().
func DefaultAlertConfig() AlertConfig { return AlertConfig{}.WithDefaults() }

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

// WithDefaults returns c with every zero field set to its documented
// default.
func (c AlertConfig) WithDefaults() AlertConfig {
	orDefault(&c.Period, defaultAlertPeriod)
	orDefault(&c.FDR, defaultAlertFDR)
	orDefault(&c.MinRatio, defaultAlertMinRatio)
	orDefault(&c.MinEvents, defaultAlertMinEvents)
	orDefault(&c.SiteObjects, defaultAlertSiteObjects)
	orDefault(&c.SiteTop, defaultAlertSiteTop)
	orDefault(&c.MaxPending, defaultAlertMaxPending)
	orDefault(&c.StrictPValue, c.FDR/defaultStrictTests)
	orDefault(&c.ScanAlarms, c.FDR)
	return c
}

// effective returns c (with defaults) with the sentinels replaced by 0.
func (c AlertConfig) effective() AlertConfig {
	c = c.WithDefaults()
	sentinelToZero(&c.MinEvents, ZeroCount)
	sentinelToZero(&c.SiteObjects, ZeroCount)
	return c
}

// orDefault sets *v to def if it is the zero value.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// sentinelToZero sets *v to 0 if it is the sentinel s.
func sentinelToZero[T ~int | ~int64](v *T, s T) {
	if *v == s {
		*v = 0
	}
}
