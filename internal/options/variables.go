package options

import (
	"log/slog"
	"slices"
	"strings"
)

// Variables lists, per command, its options as its --config-reference
// does (names without the prefix, *_FILE twins included). The commands'
// tests check that their list is exactly their options
// (TestKnownVariables), so that a new option cannot be missing here.
var Variables = map[string][]string{
	"aggregator": {
		"IN", "OUT", "EMIT", "DEMO", "STORE", "IDLE_TTL", "HTTP_ADDR", "KAFKA_BROKERS", "KAFKA_GROUP",
		"KAFKA_CLIENT_ID", "KAFKA_TLS", "KAFKA_TLS_CA", "KAFKA_TLS_CERT", "KAFKA_TLS_KEY", "KAFKA_TLS_SERVER_NAME",
		"KAFKA_TLS_INSECURE", "KAFKA_SASL_MECHANISM", "KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD",
		"KAFKA_SASL_PASSWORD_FILE", "KAFKA_SESSION_TIMEOUT", "KAFKA_HEARTBEAT", "KAFKA_REBALANCE_TIMEOUT",
		"KAFKA_REQUEST_TIMEOUT", "KAFKA_FETCH_TIMEOUT_SLACK", "KAFKA_FETCH_LINGER", "KAFKA_FETCH_MIN_BYTES",
		"KAFKA_FETCH_MAX_BYTES", "KAFKA_JOIN_TIMEOUT", "KAFKA_ORPHAN_TIMEOUT", "KAFKA_FETCH_STALL_TIMEOUT",
		"CREATE_TOPICS", "PARTITIONS", "REPLICATION_FACTOR", "OBSERVATIONS_TOPIC", "DEAD_LETTER_TOPIC",
		"ESTIMATES_TOPIC", "ACCESS_REPORTS_TOPIC", "ALERTS_TOPIC", "LATE_TOPIC", "REDIS_ADDRS", "REDIS_CLUSTER",
		"REDIS_USERNAME", "REDIS_PASSWORD", "REDIS_PASSWORD_FILE", "REDIS_DB", "REDIS_TLS", "REDIS_TLS_CA",
		"REDIS_TLS_CERT", "REDIS_TLS_KEY", "REDIS_KEY_PREFIX", "REDIS_SENTINEL_MASTER", "REDIS_SENTINEL_PASSWORD",
		"REDIS_SENTINEL_PASSWORD_FILE", "REDIS_EXPIRY_EVENTS", "REDIS_REQUIRE_DURABLE", "REDIS_KEY_FORMAT",
		"BATCH_SIZE", "CACHE_OBJECTS", "LATE_TOLERANCE", "CACHE_BYTES", "INFLIGHT_BYTES", "REPORT_PERIOD",
		"EMIT_INTERVAL", "P_STALE", "POOL_SITES", "POOL_PUBLISH", "IDLE_CHECK", "MAX_FUTURE", "REORDER_WINDOW",
		"IDLE_RELEASE", "ON_STATE_LOSS", "TAKEOVER_DELAY", "DRAIN_TIMEOUT", "SEASONAL_LEARNING",
		"SEASONAL_MIN_EVENTS", "SEASONAL_DECAY", "ALERT_PERIOD", "ALERT_FDR", "ALERT_MIN_RATIO",
		"ALERT_MIN_EVENTS", "ALERT_SITE_OBJECTS", "ALERT_SITE_TOP", "OBJECT_RHYTHM", "ALERTS_OUT", "ACCESS_REPORTS_OUT",
		"DEAD_LETTER_OUT", "LATE_OUT", "SORT", "SORT_MEMORY", "SORT_DIR", "LOG_LEVEL", "LOG_FORMAT", "DEMO_PAGES",
		"DEMO_DAYS", "DEMO_EXIT", "OUT_FORMAT", "PPROF", "API_TOKEN", "API_TOKEN_FILE", "API_TIMEOUT",
		"API_MAX_REQUEST_BYTES", "API_INDEX_OBJECTS", "API_ALERTS", "URL_PROFILE", "MIN_REVISIT", "MAX_REVISIT",
		"PLAN_BUDGET", "PLAN_PERIOD", "PLAN_POLICY", "PLAN_WEIGHTS", "PLAN_HOST_CAP", "PLAN_OUT",
	},
	"ingest": {
		"FORMAT", "OUT", "DEAD_LETTER", "PATHS", "FOLLOW", "ZONE", "PROFILE", "BASE_URL", "SQUID_LOGFORMAT",
		"MAX_LINE_BYTES", "MAX_DECOMPRESSED_BYTES", "MAX_RECORD_BYTES", "BATCH_SIZE", "CHECKPOINT",
		"CHECKPOINT_INTERVAL", "POLL_INTERVAL", "PROGRESS_INTERVAL", "DRAIN_TIMEOUT", "WRITE_RETRY_TIMEOUT",
		"SHUTDOWN_TIMEOUT",
		"OBSERVATIONS_TOPIC", "DEAD_LETTER_TOPIC", "HTTP_ADDR", "LOG_LEVEL", "LOG_FORMAT", "REPORT", "ORDER",
		"SORT_MEMORY", "SORT_DIR", "IN_TOPIC", "KAFKA_BROKERS", "KAFKA_GROUP", "KAFKA_CLIENT_ID", "KAFKA_TLS",
		"KAFKA_TLS_CA", "KAFKA_TLS_CERT", "KAFKA_TLS_KEY", "KAFKA_TLS_SERVER_NAME", "KAFKA_TLS_INSECURE",
		"KAFKA_SASL_MECHANISM", "KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD", "KAFKA_SASL_PASSWORD_FILE",
		"KAFKA_COMPRESSION", "KAFKA_LINGER",
	},
}

// toolVariables are read by the repository's tests and tools, not by the
// commands (internal/realdata, the artefact directory, the
// CHANGERATE_REQUIRE_* switches of internal/redistest, kafkatest and the
// browser tests): a developer's environment holds them.
var (
	toolVariables = []string{"DATA", "ARTIFACT_DIR"}
	toolPrefixes  = []string{"REQUIRE_"}
)

// Unknown returns the names of the variables of environ ("NAME=value", as
// os.Environ gives them) that have the prefix and are no option of any
// command, sorted: a misspelt option, or one that does not exist (a
// *_FILE of an option that is not a secret), which would otherwise be
// ignored without a word. A variable of the other command is not unknown:
// the same environment (a shared ConfigMap, a shell) may serve both.
func Unknown(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		opt, ok := strings.CutPrefix(name, Prefix+"_")
		if !ok || known(opt) {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func known(name string) bool {
	for _, vars := range Variables {
		if slices.Contains(vars, name) {
			return true
		}
	}
	if slices.Contains(toolVariables, name) {
		return true
	}
	for _, p := range toolPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// WarnUnknown logs a warning for every variable of environ that Unknown
// returns. It is not an error: the variable may be meant for a newer
// version of the other command.
func WarnUnknown(logger *slog.Logger, environ []string) {
	for _, name := range Unknown(environ) {
		logger.Warn("environment variable ignored: no option of the aggregator or of ingest has this name (misspelt? only secrets have a *_FILE variable; -h lists the options)",
			"variable", name)
	}
}
