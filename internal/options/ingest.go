package options

import (
	"time"

	"github.com/changerate/changerate/internal/cliconfig"
)

// Ingest declares every option of ingest, once, as Aggregator does the
// aggregator's: variable and flag (envconfig), default, unit, bounds
// (valid) and help (desc). Each variable is CHANGERATE_<envconfig name>
// and its flag the same name in lower case with dashes; flags win.
// docs/configuration.md's ingest table is generated from it
// (go run ./cmd/ingest --config-reference).
type Ingest struct {
	Format               string             `envconfig:"FORMAT" to:"ingest:Format" desc:"input format: one of the formats that ingest -h lists, or auto (each input's detected from its first lines)"`
	Out                  string             `envconfig:"OUT" valid:"-|kafka" default:"-" desc:"output: '-' = observations as JSON lines on stdout, 'kafka' = Kafka topics"`
	DeadLetter           string             `envconfig:"DEAD_LETTER" default:"-" desc:"dead letters in --out=- mode: '-' = stderr, or a file (appended)"`
	Paths                []string           `envconfig:"PATHS" desc:"inputs when no FILE arguments are given: files, directories, globs or - for stdin, comma-separated"`
	Follow               bool               `envconfig:"FOLLOW" to:"ingest:Follow" desc:"follow plain files like tail -F (rotation and truncation handled; new files of the directories and globs are found)"`
	Zone                 string             `envconfig:"ZONE" desc:"time zone (IANA name, e.g. 'UTC', 'Europe/Oslo') of timestamps without one; '' rejects them"`
	Profile              string             `envconfig:"PROFILE" valid:"changerate|whatwg|semantic" to:"ingest:Parse.Profile" desc:"URL canonicalisation profile: changerate, whatwg or semantic"`
	BaseURL              string             `envconfig:"BASE_URL" desc:"base URL of path-only request targets (CLF, NASA, WorldCup); default 'http://localhost'"`
	SquidLogformat       string             `envconfig:"SQUID_LOGFORMAT" to:"ingest:Parse.SquidLogformat" desc:"Squid logformat: squid (native, default), common, combined, referrer, or a logformat of Squid % tokens or field names"`
	MaxLineBytes         cliconfig.ByteSize `envconfig:"MAX_LINE_BYTES" valid:">=64" to:"ingest:MaxLineBytes" desc:"longest accepted line, e.g. 1MiB"`
	MaxDecompressedBytes cliconfig.ByteSize `envconfig:"MAX_DECOMPRESSED_BYTES" valid:">0" to:"ingest:MaxDecompressedBytes" desc:"largest decompressed size of one gzip input, e.g. 64GiB"`
	MaxRecordBytes       cliconfig.ByteSize `envconfig:"MAX_RECORD_BYTES" valid:">0" to:"ingest:MaxRecordBytes" desc:"largest WARC record, e.g. 256MiB"`
	BatchSize            int                `envconfig:"BATCH_SIZE" unit:"messages" valid:">=1" to:"ingest:BatchSize" desc:"messages per sink write"`
	Checkpoint           string             `envconfig:"CHECKPOINT" to:"ingest:CheckpointPath" desc:"checkpoint file of input positions; empty: none"`
	CheckpointInterval   time.Duration      `envconfig:"CHECKPOINT_INTERVAL" desc:"least time between checkpoint writes (fsync); 0: after every acknowledged batch"`
	PollInterval         time.Duration      `envconfig:"POLL_INTERVAL" valid:">0" to:"ingest:PollInterval" desc:"follow mode poll period"`
	ProgressInterval     time.Duration      `envconfig:"PROGRESS_INTERVAL" to:"ingest:ProgressInterval" desc:"period of the progress log line; a negative duration (e.g. -1s): none"`
	DrainTimeout         time.Duration      `envconfig:"DRAIN_TIMEOUT" valid:">0" to:"ingest:DrainTimeout" desc:"bound of the last batch write after SIGTERM"`
	WriteRetryTimeout    time.Duration      `envconfig:"WRITE_RETRY_TIMEOUT" valid:">0" to:"ingest:WriteRetryTimeout" desc:"how long a run without FOLLOW retries a failing Kafka write (broker unreachable) before it fails; with FOLLOW or IN_TOPIC failing writes are retried until they succeed"`
	ShutdownTimeout      time.Duration      `envconfig:"SHUTDOWN_TIMEOUT" valid:">0" default:"30s" desc:"exit at the latest this long after SIGTERM"`
	Topics
	HTTP
	Log
	Report bool   `envconfig:"REPORT" desc:"print per-input counts (lines, observations, skipped and rejects by reason) on stderr at the end, besides the summary"`
	Order  string `envconfig:"ORDER" valid:"|time|input" desc:"order of the observations written: time (sorted by event time: several files merged, a file written newest first read in order; the default when reading files once) or input (as read; the default with FOLLOW, IN_TOPIC or CHECKPOINT, and for capture indexes, cdx and cdxj, whose captures of each object are in time order)"`
	ExternalSort
	InTopic string `envconfig:"IN_TOPIC" desc:"read lines from this Kafka topic instead of files (e.g. 'heritrix-crawl-log' with --format=heritrix-json), in consumer group --kafka-group"`

	Kafka
	KafkaProducer
}

// DefaultIngest is ingest's declaration with its option groups' defaults
// (no HTTP listener, its Kafka client id and group); the command adds its
// library's (cliconfig.Defaults).
func DefaultIngest(clientID string) Ingest {
	return Ingest{Topics: DefaultTopics(), HTTP: DefaultHTTP(""), ExternalSort: DefaultExternalSort(), Kafka: DefaultKafka(clientID, clientID)}
}
