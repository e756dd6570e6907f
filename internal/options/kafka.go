package options

import (
	"strings"
	"time"

	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/stream"
)

// Kafka is the connection to Kafka: brokers, identity, consumer group,
// TLS and SASL. Its zero value leaves ClientID and Group to the library's
// defaults; commands start from DefaultKafka with their own names.
type Kafka struct {
	Brokers  []string `envconfig:"KAFKA_BROKERS" desc:"comma-separated Kafka bootstrap brokers (host:port); with them the aggregator runs in service mode; ingest needs them for --out=kafka and --in-topic"`
	Group    string   `envconfig:"KAFKA_GROUP" desc:"consumer group of the aggregators, or of ingest's --in-topic readers"`
	ClientID string   `envconfig:"KAFKA_CLIENT_ID" desc:"Kafka client id"`

	TLS           bool   `envconfig:"KAFKA_TLS" desc:"connect to Kafka over TLS"`
	TLSCA         string `envconfig:"KAFKA_TLS_CA" desc:"PEM CA bundle verifying the brokers (default: system roots)"`
	TLSCert       string `envconfig:"KAFKA_TLS_CERT" desc:"PEM client certificate for mutual TLS"`
	TLSKey        string `envconfig:"KAFKA_TLS_KEY" desc:"PEM key of KAFKA_TLS_CERT"`
	TLSServerName string `envconfig:"KAFKA_TLS_SERVER_NAME" desc:"server name verified in broker certificates (default: the broker host)"`
	TLSInsecure   bool   `envconfig:"KAFKA_TLS_INSECURE" desc:"skip broker certificate verification (testing only)"`

	SASLMechanism string `envconfig:"KAFKA_SASL_MECHANISM" desc:"SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default: none)"`
	SASLUsername  string `envconfig:"KAFKA_SASL_USERNAME" desc:"SASL user name"`
	SASLPassword  string `envconfig:"KAFKA_SASL_PASSWORD" file:"true" desc:"SASL password"`
}

// DefaultKafka is the Kafka group of a command whose client id and
// consumer group default to clientID and group.
func DefaultKafka(clientID, group string) Kafka {
	return Kafka{ClientID: clientID, Group: group}
}

// Config is the stream configuration of the connection; the other fields
// are zero (the library's defaults).
func (k Kafka) Config() stream.KafkaConfig {
	return stream.KafkaConfig{
		Brokers: k.Brokers, ClientID: k.ClientID, GroupID: k.Group,
		TLS: stream.KafkaTLSConfig{Enable: k.TLS, CAFile: k.TLSCA, CertFile: k.TLSCert, KeyFile: k.TLSKey,
			ServerName: k.TLSServerName, InsecureSkipVerify: k.TLSInsecure},
		SASL: stream.KafkaSASLConfig{Mechanism: k.SASLMechanism, Username: k.SASLUsername, Password: k.SASLPassword},
	}
}

// KafkaTimeouts are the bounds of a consumer-group member and of its
// requests. A zero field means the library's default.
type KafkaTimeouts struct {
	Session   time.Duration `envconfig:"KAFKA_SESSION_TIMEOUT" demo:"true" desc:"consumer-group session timeout: how long a silent member keeps its partitions"`
	Heartbeat time.Duration `envconfig:"KAFKA_HEARTBEAT" demo:"true" desc:"consumer-group heartbeat interval"`
	Rebalance time.Duration `envconfig:"KAFKA_REBALANCE_TIMEOUT" demo:"tuning" desc:"consumer-group rebalance timeout: how long the coordinator waits for members to rejoin"`
	Request   time.Duration `envconfig:"KAFKA_REQUEST_TIMEOUT" demo:"tuning" desc:"bound of one Kafka request other than fetch (produce, metadata, offsets, group)"`
	// FetchSlack's description repeats stream.DefaultKafkaFetchMaxWait;
	// TestDefaultsAreTheLibrarys checks it.
	FetchSlack time.Duration `envconfig:"KAFKA_FETCH_TIMEOUT_SLACK" demo:"tuning" desc:"a fetch without a response after the broker's max wait (500ms) plus this is abandoned and retried on a new connection"`
	// FetchLinger and FetchMinBytes batch a busy partition's input
	// (stream.KafkaConfig.FetchLinger).
	FetchLinger   time.Duration      `envconfig:"KAFKA_FETCH_LINGER" demo:"tuning" desc:"a fetch of a partition that has input waits up to this long for KAFKA_FETCH_MIN_BYTES, so that batches at moderate rates are not a handful of messages each (each batch costs a state commit and a produce request); at most this is added to an observation's latency"`
	FetchMinBytes cliconfig.ByteSize `envconfig:"KAFKA_FETCH_MIN_BYTES" demo:"tuning" desc:"bytes a fetch of a partition that has input waits for (up to KAFKA_FETCH_LINGER), e.g. 64KiB; 1 turns the linger off"`
	// FetchMaxBytes sizes a partition's fetches
	// (stream.KafkaConfig.FetchMaxBytes).
	FetchMaxBytes cliconfig.ByteSize `envconfig:"KAFKA_FETCH_MAX_BYTES" demo:"tuning" desc:"most bytes one fetch returns for one partition (Kafka's max.partition.fetch.bytes); a partition with a backlog fills its batch from the responses that are ready (up to BATCH_SIZE, at most two responses), so a history replay with a larger BATCH_SIZE needs this larger too (fewer state writes per observation, more memory); each fetch in flight takes this much of the fetch-ahead budget (as much as INFLIGHT_BYTES)"`
	Join          time.Duration      `envconfig:"KAFKA_JOIN_TIMEOUT" demo:"tuning" desc:"watchdog: without a consumer-group generation for this long, rejoin with a fresh member ID (default: 2 x KAFKA_REBALANCE_TIMEOUT + 10s)"`
	Orphan        time.Duration      `envconfig:"KAFKA_ORPHAN_TIMEOUT" demo:"tuning" desc:"another member's partition with input waiting and no committed progress for this long (while this member's are healthy) makes this member rejoin, so that the group drops dead members; negative disables (default: the larger of KAFKA_SESSION_TIMEOUT and 10s)"`
	Stall         time.Duration      `envconfig:"KAFKA_FETCH_STALL_TIMEOUT" demo:"tuning" desc:"watchdog: an owned partition without any fetch response for this long (while fetching) makes the member rejoin with a fresh member ID (default: the larger of KAFKA_SESSION_TIMEOUT and twice the fetch bound)"`
}

// DefaultKafkaTimeouts holds the library's defaults (stream.DefaultKafka*),
// so that they are documented; the watchdogs' defaults depend on other
// fields and stay zero.
func DefaultKafkaTimeouts() KafkaTimeouts {
	return KafkaTimeouts{
		Session:       stream.DefaultKafkaSessionTimeout,
		Heartbeat:     stream.DefaultKafkaHeartbeatInterval,
		Rebalance:     stream.DefaultKafkaRebalanceTimeout,
		Request:       stream.DefaultKafkaRequestTimeout,
		FetchSlack:    stream.DefaultKafkaFetchTimeoutSlack,
		FetchLinger:   stream.DefaultKafkaFetchLinger,
		FetchMinBytes: cliconfig.ByteSize(stream.DefaultKafkaFetchMinBytes),
		FetchMaxBytes: cliconfig.ByteSize(stream.DefaultKafkaFetchMaxBytes),
	}
}

// ApplyTo sets the timeouts of c.
func (t KafkaTimeouts) ApplyTo(c *stream.KafkaConfig) {
	c.SessionTimeout = t.Session
	c.HeartbeatInterval = t.Heartbeat
	c.RebalanceTimeout = t.Rebalance
	c.RequestTimeout = t.Request
	c.FetchTimeoutSlack = t.FetchSlack
	c.FetchLinger = t.FetchLinger
	c.FetchMinBytes = int(t.FetchMinBytes)
	c.FetchMaxBytes = int(t.FetchMaxBytes)
	c.JoinTimeout = t.Join
	c.OrphanTimeout = t.Orphan
	c.FetchStallTimeout = t.Stall
}

// KafkaProducer tunes the produce requests.
type KafkaProducer struct {
	Compression string `envconfig:"KAFKA_COMPRESSION" desc:"produce compression: none, gzip, snappy, lz4, zstd"`
	// Linger's default is the command's own (the library's is 0).
	Linger time.Duration `envconfig:"KAFKA_LINGER" default:"5ms" valid:">=0" desc:"how long the producer waits to fill a batch"`
}

// ApplyTo sets the producer options of c.
func (p KafkaProducer) ApplyTo(c *stream.KafkaConfig) {
	c.Compression = p.Compression
	c.Linger = p.Linger
}

// kafkaFields maps the Kafka configuration's field names, as its
// validation errors name them, to the options that set them.
var kafkaFields = []struct{ field, option string }{
	{"KafkaConfig.TLS.CertFile/KeyFile", "KAFKA_TLS_CERT/KAFKA_TLS_KEY"},
	{"KafkaConfig.TLS.Enable", "KAFKA_TLS"},
	{"KafkaConfig.TLS.CAFile", "KAFKA_TLS_CA"},
	{"KafkaConfig.SASL.Username", "KAFKA_SASL_USERNAME"},
	{"KafkaConfig.SASL.Mechanism", "KAFKA_SASL_MECHANISM"},
	{"KafkaConfig.SASL", "KAFKA_SASL_MECHANISM"},
	{"KafkaConfig.Brokers", "KAFKA_BROKERS"},
	{"KafkaConfig.HeartbeatInterval", "KAFKA_HEARTBEAT"},
	{"KafkaConfig.SessionTimeout", "KAFKA_SESSION_TIMEOUT"},
	{"KafkaConfig.Compression", "KAFKA_COMPRESSION"},
	{"KafkaConfig.Linger", "KAFKA_LINGER"},
	{"KafkaConfig.BatchSize", "BATCH_SIZE"},
	{"KafkaConfig.RequestTimeout", "KAFKA_REQUEST_TIMEOUT"},
	{"KafkaConfig.RebalanceTimeout", "KAFKA_REBALANCE_TIMEOUT"},
	{"KafkaConfig.FetchTimeoutSlack", "KAFKA_FETCH_TIMEOUT_SLACK"},
	{"KafkaConfig.FetchLinger", "KAFKA_FETCH_LINGER"},
	{"KafkaConfig.FetchMinBytes", "KAFKA_FETCH_MIN_BYTES"},
	{"KafkaConfig.FetchMaxBytes", "KAFKA_FETCH_MAX_BYTES"},
	{"KafkaConfig.FetchBufferBytes", "INFLIGHT_BYTES"},
	{"KafkaConfig.JoinTimeout", "KAFKA_JOIN_TIMEOUT"},
	{"KafkaConfig.FetchStallTimeout", "KAFKA_FETCH_STALL_TIMEOUT"},
	{"KafkaConfig.OrphanTimeout", "KAFKA_ORPHAN_TIMEOUT"},
	{"SessionTimeout", "KAFKA_SESSION_TIMEOUT"},
}

// KafkaError rewrites an error of stream.KafkaConfig.Validate (or of a
// constructor validating it) for the user: the fields it names become the
// options that set them ("CHANGERATE_KAFKA_BROKERS (--kafka-brokers)").
func KafkaError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "stream: ")
	for _, f := range kafkaFields {
		if !strings.Contains(msg, f.field) {
			continue
		}
		var names []string
		for _, o := range strings.Split(f.option, "/") {
			names = append(names, Name(o))
		}
		msg = strings.ReplaceAll(msg, f.field, strings.Join(names, "/"))
	}
	return strings.ReplaceAll(msg, "KafkaConfig.", "")
}
