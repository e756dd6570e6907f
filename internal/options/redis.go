package options

import (
	"strings"
	"time"

	"github.com/changerate/changerate/state"
)

// Redis is the connection to Redis and the key layout of the state store.
type Redis struct {
	Addrs            []string `envconfig:"REDIS_ADDRS" desc:"comma-separated Redis addresses (host:port); several with REDIS_CLUSTER for a cluster"`
	Cluster          bool     `envconfig:"REDIS_CLUSTER" desc:"use Redis Cluster"`
	Username         string   `envconfig:"REDIS_USERNAME" desc:"Redis ACL user"`
	Password         string   `envconfig:"REDIS_PASSWORD" file:"true" desc:"Redis password (AUTH)"`
	DB               int      `envconfig:"REDIS_DB" default:"0" unit:"database index" desc:"Redis database (standalone only)"`
	TLS              bool     `envconfig:"REDIS_TLS" desc:"connect to Redis over TLS"`
	TLSCA            string   `envconfig:"REDIS_TLS_CA" desc:"PEM CA bundle verifying Redis (default: system roots)"`
	TLSCert          string   `envconfig:"REDIS_TLS_CERT" desc:"PEM client certificate for Redis"`
	TLSKey           string   `envconfig:"REDIS_TLS_KEY" desc:"PEM key of REDIS_TLS_CERT"`
	KeyPrefix        string   `envconfig:"REDIS_KEY_PREFIX" desc:"prefix of every Redis key"`
	SentinelMaster   string   `envconfig:"REDIS_SENTINEL_MASTER" desc:"Redis with Sentinel: the master's name; REDIS_ADDRS are then the Sentinels (go-redis failover client)"`
	SentinelPassword string   `envconfig:"REDIS_SENTINEL_PASSWORD" file:"true" desc:"password of the Sentinels (default: none)"`
	ExpiryEvents     string   `envconfig:"REDIS_EXPIRY_EVENTS" desc:"counting expired objects: config (enable notify-keyspace-events Ex with CONFIG SET, then subscribe), subscribe (the server is configured; no CONFIG permission needed) or off"`
	// RequireDurable is the command's: the library only reports
	// (state.Redis.CheckDurability).
	RequireDurable bool `envconfig:"REDIS_REQUIRE_DURABLE" default:"true" desc:"refuse to start unless every Redis master has maxmemory-policy noeviction and appendonly yes (false: for tests and development only)"`
	// KeyFormat's default is the library's, buckets.
	KeyFormat string `envconfig:"REDIS_KEY_FORMAT" desc:"state layout: buckets (each partition's objects in REDIS_BUCKETS Redis hashes, no Redis TTL; the owner sweeps idle objects; migrates a partition's compact keys at its claim), compact (the previous release's: one 14-byte hashed key per object with a TTL) or readable ({prefix topic:partition}:o:<object>, for debugging)"`
	// Buckets' default is the library's, state.DefaultBuckets; its upper
	// bound is state.MaxBuckets (TestRedisBucketsBounds).
	Buckets int `envconfig:"REDIS_BUCKETS" unit:"buckets per partition" valid:">=1 <=262144" desc:"hashes per partition of the buckets layout, fixed at a partition's first claim: a partition already claimed keeps the count stored in its meta hash, whatever this says; only partitions claimed for the first time take it. A bucket holds objects ÷ (partitions × buckets) objects, about 185 bytes each with 180-byte states, and Redis Cluster's MIGRATE blocks both nodes while it moves one (about 8 ms per MB on 1 Gbit/s): the default 1024 keeps a bucket at 0.7 MB (6 ms) at 10^9 objects over 256 partitions. Fewer buckets put more objects in each of a commit's HSETs and cost Redis less CPU per observation: with far fewer objects, size buckets to stay under about 1 MB (docs/state-layout.md)"`
}

// DefaultRedisKeyPrefix is state.RedisConfig's default KeyPrefix, which
// the state package does not export (TestDefaultsAreTheLibrarys checks
// that they agree).
const DefaultRedisKeyPrefix = "cr:"

// DefaultRedis is the Redis group with the defaults it documents.
func DefaultRedis() Redis {
	return Redis{
		KeyPrefix:    DefaultRedisKeyPrefix,
		ExpiryEvents: state.ExpiryEventsConfig,
		KeyFormat:    state.KeyFormatBuckets,
		Buckets:      state.DefaultBuckets,
	}
}

// Config is the store's configuration; objects expire after idleTTL
// without observations (0: never).
func (r Redis) Config(idleTTL time.Duration) state.RedisConfig {
	return state.RedisConfig{
		Addrs: r.Addrs, Username: r.Username, Password: r.Password, DB: r.DB,
		Cluster: r.Cluster, KeyPrefix: r.KeyPrefix, KeyFormat: r.KeyFormat, Buckets: r.Buckets, IdleTTL: idleTTL,
		SentinelMaster: r.SentinelMaster, SentinelPassword: r.SentinelPassword, ExpiryEvents: r.ExpiryEvents,
		TLS: state.RedisTLS{Enable: r.TLS, CAFile: r.TLSCA, CertFile: r.TLSCert, KeyFile: r.TLSKey},
	}
}

// redisFields maps the fields that state.RedisConfig.Validate names to the
// options that set them; idleTTL is the command's.
func redisFields(idleTTL string) []struct{ field, option string } {
	return []struct{ field, option string }{
		{"TLS: CertFile and KeyFile must be set together", Name("REDIS_TLS_CERT") + " and " + Name("REDIS_TLS_KEY") + " must be set together"},
		{"TLS: options set but TLS.Enable is false", "Redis TLS options are set but " + Name("REDIS_TLS") + " is false"},
		{"SentinelMaster:", Name("REDIS_SENTINEL_MASTER") + ":"},
		{"ExpiryEvents:", Name("REDIS_EXPIRY_EVENTS") + ":"},
		{"KeyFormat:", Name("REDIS_KEY_FORMAT") + ":"},
		{"Buckets:", Name("REDIS_BUCKETS") + ":"},
		{"KeyPrefix:", Name("REDIS_KEY_PREFIX") + ":"},
		{"IdleTTL:", Name(idleTTL) + ":"},
		{"Addrs:", Name("REDIS_ADDRS") + ":"},
		{"DB:", Name("REDIS_DB") + ":"},
	}
}

// RedisError rewrites an error of state.RedisConfig.Validate for the
// user: every problem on its line, named by the option that sets it;
// idleTTL names the command's option that sets RedisConfig.IdleTTL.
func RedisError(err error, idleTTL string) string {
	msg := strings.TrimPrefix(err.Error(), "state: invalid Redis config: ")
	lines := strings.Split(msg, "\n")
	fields := redisFields(idleTTL)
	for i, l := range lines {
		for _, f := range fields {
			if strings.HasPrefix(l, f.field) {
				lines[i] = f.option + strings.TrimPrefix(l, f.field)
				break
			}
		}
	}
	if len(lines) == 1 {
		return lines[0]
	}
	return "invalid Redis configuration:\n  " + strings.Join(lines, "\n  ")
}
