package state

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/changerate/changerate/internal/tlsfiles"
)

// RedisConfig configures a Redis store. The zero value of every field means
// its documented default (WithDefaults fills them in); Validate lists every
// problem at once.
type RedisConfig struct {
	// Addrs are the server addresses (host:port). Standalone mode uses the
	// first; Cluster mode uses them as seeds. Default ["localhost:6379"].
	Addrs []string
	// Username is the ACL user (Redis 6+). Default "" (the default user).
	Username string
	// Password authenticates Username (or requirepass). Default "" (none).
	Password string
	// DB is the database number in standalone mode. Default 0; must be 0
	// in Cluster mode.
	DB int
	// TLS configures TLS to Redis. Default off.
	TLS RedisTLS
	// Cluster selects go-redis's ClusterClient. Default false.
	Cluster bool
	// SentinelMaster, when set, selects Redis with Sentinel: Addrs are then
	// the Sentinels' addresses, and go-redis's failover client asks them for
	// the master of this name and follows failovers. Default "" (no
	// Sentinel). Not with Cluster.
	SentinelMaster string
	// SentinelUsername and SentinelPassword authenticate to the Sentinels
	// (their own ACL, separate from the data nodes'). Default "": none.
	SentinelUsername string
	SentinelPassword string
	// KeyPrefix starts every key, inside the hash tag: a partition's keys
	// are "{<KeyPrefix><topic>:<id>}:meta" and "{...}:o:<object>". It may
	// not contain '{' or '}'. Default "cr:".
	KeyPrefix string
	// KeyFormat selects the layout (see Redis):
	//   "buckets" (default): each partition's objects in Buckets Redis
	//              hashes keyed by the compact tag, the field the compact
	//              key's hash bytes, no Redis TTL (the owner sweeps idle
	//              objects inside its commits); a partition's per-object
	//              compact keys of the previous release are migrated into
	//              its buckets at Claim (docs/state-layout.md).
	//   "compact": the previous release's per-object layout, 14 bytes, "{<tag>}<hash>", where tag (2-4 characters)
	//              is one character for KeyPrefix+topic and the partition
	//              ID in base 64, and hash the first 8-10 bytes of
	//              SHA-256(object) (10 for IDs < 64, 9 below 4096), so that
	//              a 180-byte value takes 248 bytes in MEMORY USAGE. Two
	//              topics whose tags collide (chance 1/64 per pair) are
	//              detected at Claim (ErrKeyCollision): change KeyPrefix.
	//   "readable": "{<KeyPrefix><topic>:<id>}:o:<object>", for reading
	//              the store with redis-cli.
	KeyFormat string
	// Buckets is the bucket count of a partition first claimed with the
	// "buckets" format (a partition keeps the count its first claim
	// stored). Default DefaultBuckets.
	Buckets int
	// IdleTTL is how long an object lives after its last Commit. Buckets:
	// Get no longer returns it from then on, and the owner's sweep deletes
	// it within about IdleTTL/16 more. Per-object formats: SET ... PX
	// IdleTTL + ExpiryGrace, or KEEPTTL within the grace (see
	// Store.ExpiryGrace). Default 0: objects never expire. At least 1ms
	// when set.
	IdleTTL time.Duration
	// Now is the clock of the bucketed layout's stamps and sweeps (the
	// per-object formats use Redis's own clock for TTLs). Default
	// time.Now; tests inject a fake clock.
	Now func() time.Time
	// ExpiryEvents selects how expired objects are counted:
	//   "config" (default): add "Ex" to notify-keyspace-events with CONFIG
	//            SET on every master (keeping the flags already set), then
	//            subscribe; if CONFIG is denied, subscribe anyway and log.
	//   "subscribe": only subscribe; the operator configured the server
	//            (managed Redis services often disable CONFIG).
	//   "off": do not count.
	ExpiryEvents string
	// ExpiryScope selects which expired objects this store counts:
	//   "owned" (default): objects of partitions this store has claimed and
	//            not since been fenced from, so that several aggregator
	//            processes sharing a Redis count each expiry about once
	//            (twice at most, briefly, after a partition moves; not at
	//            all while nobody owns a partition).
	//   "all": every object key of this KeyPrefix (compact: every compact
	//            key) on the server.
	ExpiryScope string
	// ExpiryEventsRecheck is how often, with ExpiryEvents "config", the
	// masters' notify-keyspace-events are checked and "Ex" added again
	// (a restarted Redis forgets a CONFIG SET unless its config file has
	// it). Default 1m.
	ExpiryEventsRecheck time.Duration
	// PoolSize is the connection pool size per node. Default 0: go-redis's
	// default (10 per GOMAXPROCS).
	PoolSize int
	// DialTimeout bounds connecting. Default 5s.
	DialTimeout time.Duration
	// ReadTimeout bounds reading one reply. Default 3s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing one command. Default 3s.
	WriteTimeout time.Duration
}

// RedisTLS configures TLS connections to Redis.
type RedisTLS struct {
	// Enable turns TLS on. Default false.
	Enable bool
	// CAFile is a PEM bundle of CAs to trust. Default "": the system pool.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and key, for
	// servers with tls-auth-clients. Default "": none. Both or neither.
	CertFile string
	KeyFile  string
	// ServerName overrides the name verified in the server's certificate.
	// Default "": the host of the address dialled.
	ServerName string
	// InsecureSkipVerify disables certificate verification (testing only).
	// Default false.
	InsecureSkipVerify bool
}

// Expiry scopes of RedisConfig.ExpiryScope.
const (
	ExpiryScopeOwned = "owned"
	ExpiryScopeAll   = "all"
)

// Key formats of RedisConfig.KeyFormat.
const (
	KeyFormatReadable = "readable"
	KeyFormatCompact  = "compact"
	KeyFormatBuckets  = "buckets"
)

// Expiry event modes of RedisConfig.ExpiryEvents.
const (
	ExpiryEventsConfig    = "config"
	ExpiryEventsSubscribe = "subscribe"
	ExpiryEventsOff       = "off"
)

// WithDefaults returns c with the default of every zero field filled in.
func (c RedisConfig) WithDefaults() RedisConfig {
	if len(c.Addrs) == 0 {
		c.Addrs = []string{"localhost:6379"}
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = "cr:"
	}
	if c.KeyFormat == "" {
		c.KeyFormat = KeyFormatBuckets
	}
	if c.Buckets == 0 {
		c.Buckets = DefaultBuckets
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ExpiryEvents == "" {
		c.ExpiryEvents = ExpiryEventsConfig
	}
	if c.ExpiryScope == "" {
		c.ExpiryScope = ExpiryScopeOwned
	}
	if c.ExpiryEventsRecheck == 0 {
		c.ExpiryEventsRecheck = time.Minute
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 3 * time.Second
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 3 * time.Second
	}
	return c
}

// Validate reports every problem of c (with defaults filled in) at once,
// each naming its field.
func (c RedisConfig) Validate() error {
	c = c.WithDefaults()
	var errs []error
	for _, a := range c.Addrs {
		if a == "" || !strings.Contains(a, ":") {
			errs = append(errs, fmt.Errorf("Addrs: %q is not host:port", a))
		}
	}
	if c.DB < 0 {
		errs = append(errs, fmt.Errorf("DB: %d is negative", c.DB))
	}
	if c.Cluster && c.DB != 0 {
		errs = append(errs, fmt.Errorf("DB: %d, but Cluster mode only has DB 0", c.DB))
	}
	if c.SentinelMaster != "" && c.Cluster {
		errs = append(errs, errors.New("SentinelMaster: Sentinel and Cluster are exclusive"))
	}
	if strings.ContainsAny(c.KeyPrefix, "{}") {
		errs = append(errs, fmt.Errorf("KeyPrefix: %q contains '{' or '}'", c.KeyPrefix))
	}
	if c.IdleTTL < 0 || (c.IdleTTL > 0 && c.IdleTTL < time.Millisecond) {
		errs = append(errs, fmt.Errorf("IdleTTL: %v must be 0 (never) or at least 1ms", c.IdleTTL))
	}
	switch c.KeyFormat {
	case KeyFormatReadable, KeyFormatCompact, KeyFormatBuckets:
	default:
		errs = append(errs, fmt.Errorf("KeyFormat: %q is not buckets, compact or readable", c.KeyFormat))
	}
	if c.Buckets < 0 || c.Buckets > MaxBuckets {
		errs = append(errs, fmt.Errorf("Buckets: %d is not in [1, %d]", c.Buckets, MaxBuckets))
	}
	switch c.ExpiryEvents {
	case ExpiryEventsConfig, ExpiryEventsSubscribe, ExpiryEventsOff:
	default:
		errs = append(errs, fmt.Errorf("ExpiryEvents: %q is not config, subscribe or off", c.ExpiryEvents))
	}
	if c.ExpiryScope != ExpiryScopeOwned && c.ExpiryScope != ExpiryScopeAll {
		errs = append(errs, fmt.Errorf("ExpiryScope: %q is not owned or all", c.ExpiryScope))
	}
	if c.PoolSize < 0 {
		errs = append(errs, fmt.Errorf("PoolSize: %d is negative", c.PoolSize))
	}
	for name, d := range map[string]time.Duration{"ExpiryEventsRecheck": c.ExpiryEventsRecheck, "DialTimeout": c.DialTimeout, "ReadTimeout": c.ReadTimeout, "WriteTimeout": c.WriteTimeout} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s: %v is negative", name, d))
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("TLS: CertFile and KeyFile must be set together"))
	}
	if !c.TLS.Enable && (c.TLS.CAFile != "" || c.TLS.CertFile != "" || c.TLS.InsecureSkipVerify || c.TLS.ServerName != "") {
		errs = append(errs, errors.New("TLS: options set but TLS.Enable is false"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("state: invalid Redis config: %w", errors.Join(errs...))
	}
	return nil
}

// dialer returns a dial function doing TLS with the files' current
// contents (rotated certificates and CAs apply to new connections), or nil
// without TLS (go-redis's default dialer).
func (t RedisTLS) dialer(timeout time.Duration) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	if !t.Enable {
		return nil, nil
	}
	src, err := tlsfiles.New(tlsfiles.Files{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile,
		ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify})
	if err != nil {
		return nil, fmt.Errorf("state: RedisConfig.TLS.CAFile, CertFile or KeyFile: %w", err)
	}
	return src.DialFunc((&net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}).DialContext), nil
}

// NewRedisClient builds the go-redis client that cfg describes: a
// *redis.ClusterClient when cfg.Cluster, a failover *redis.Client (through
// the Sentinels) when cfg.SentinelMaster is set, else a *redis.Client. It
// does not connect.
func NewRedisClient(cfg RedisConfig) (redis.UniversalClient, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	dial, err := cfg.TLS.dialer(cfg.DialTimeout)
	if err != nil {
		return nil, err
	}
	if cfg.Cluster {
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: cfg.Addrs, Username: cfg.Username, Password: cfg.Password, Dialer: dial,
			DisableIdentity: true, // no CLIENT SETINFO: one round trip and one ACL permission less (RedisACLRules)
			PoolSize:        cfg.PoolSize, DialTimeout: cfg.DialTimeout, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
		}), nil
	}
	if cfg.SentinelMaster != "" {
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: cfg.SentinelMaster, SentinelAddrs: cfg.Addrs,
			SentinelUsername: cfg.SentinelUsername, SentinelPassword: cfg.SentinelPassword,
			Username: cfg.Username, Password: cfg.Password, DB: cfg.DB, Dialer: dial,
			DisableIdentity: true, // no CLIENT SETINFO: one round trip and one ACL permission less (RedisACLRules)
			PoolSize:        cfg.PoolSize, DialTimeout: cfg.DialTimeout, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
		}), nil
	}
	return redis.NewClient(&redis.Options{
		Addr: cfg.Addrs[0], Username: cfg.Username, Password: cfg.Password, DB: cfg.DB, Dialer: dial,
		DisableIdentity: true, // no CLIENT SETINFO: one round trip and one ACL permission less (RedisACLRules)
		PoolSize:        cfg.PoolSize, DialTimeout: cfg.DialTimeout, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
	}), nil
}
