// Package kafkatest starts an in-process Kafka-protocol broker (franz-go's
// kfake) for tests and benchmarks, with helpers to create topics, produce
// and read records with an independent client (franz-go's kgo, so tests of
// the kafka-go based code in package stream cross-check two clients), delete
// records (to provoke out-of-range offsets), and run the real kcat binary.
//
// Every Cluster listens on free ports of 127.0.0.1 chosen by the kernel and
// is shut down by t.Cleanup. The package does not depend on package stream.
package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EnvRequireKcat, when set to a non-empty value, turns a missing kcat binary
// into a test failure instead of a skip.
const EnvRequireKcat = "CHANGERATE_REQUIRE_KCAT"

// EnvLog, when set to one of "error", "warn", "info" or "debug", makes the
// broker log to stderr at that level.
const EnvLog = "KAFKATEST_LOG"

// Topic is a topic to create at start.
type Topic struct {
	Name       string
	Partitions int32
}

// Options configures Start. The zero value is one broker, no topics, and a
// minimum group session timeout of 100ms (so tests may use short sessions).
type Options struct {
	// Brokers is the number of brokers. Default 1.
	Brokers int
	// Topics are created before Start returns.
	Topics []Topic
	// MinSessionTimeout is the smallest group session timeout the broker
	// accepts. Default 100ms (Kafka's default is 6s).
	MinSessionTimeout time.Duration
	// Advertise, when set (with one broker), is the address the broker
	// advertises in metadata instead of its listener's, e.g. a fault proxy
	// in front of it (every client connection then goes through the
	// proxy); ListenerAddr returns the real one. Default "".
	Advertise string
	// Extra are further kfake options, applied last.
	Extra []kfake.Opt
}

// Cluster is a running kfake cluster.
type Cluster struct {
	c        *kfake.Cluster
	addrs    []string
	listener string
}

// Start starts a one-broker cluster with the given topics; see StartWith.
func Start(t testing.TB, topics ...Topic) *Cluster {
	t.Helper()
	return StartWith(t, Options{Topics: topics})
}

// StartWith starts a cluster configured by o and registers its shutdown
// with t.Cleanup.
func StartWith(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Brokers <= 0 {
		o.Brokers = 1
	}
	if o.MinSessionTimeout <= 0 {
		o.MinSessionTimeout = 100 * time.Millisecond
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(o.Brokers),
		kfake.GroupMinSessionTimeout(o.MinSessionTimeout),
		kfake.ClusterID("kafkatest"),
	}
	if lvl, ok := logLevel(os.Getenv(EnvLog)); ok {
		opts = append(opts, kfake.WithLogger(kfake.BasicLogger(os.Stderr, lvl)))
	}
	for _, tp := range o.Topics {
		opts = append(opts, kfake.SeedTopics(tp.Partitions, tp.Name))
	}
	var listener string
	if o.Advertise != "" {
		if o.Brokers != 1 {
			t.Fatalf("kafkatest: Advertise needs one broker, got %d", o.Brokers)
		}
		adv, err := net.ResolveTCPAddr("tcp", o.Advertise)
		if err != nil {
			t.Fatalf("kafkatest: Advertise: %v", err)
		}
		opts = append(opts, kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			l, err := net.Listen(network, "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			listener = l.Addr().String()
			return advertised{l, adv}, nil
		}))
	}
	opts = append(opts, o.Extra...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kafkatest: starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	cl := &Cluster{c: c, addrs: c.ListenAddrs(), listener: listener}
	if cl.listener == "" {
		cl.listener = cl.addrs[0]
	}
	return cl
}

func logLevel(s string) (kfake.LogLevel, bool) {
	switch strings.ToLower(s) {
	case "error":
		return kfake.LogLevelError, true
	case "warn":
		return kfake.LogLevelWarn, true
	case "info":
		return kfake.LogLevelInfo, true
	case "debug":
		return kfake.LogLevelDebug, true
	}
	return kfake.LogLevelNone, false
}

// Addrs returns the brokers' "127.0.0.1:port" addresses.
func (c *Cluster) Addrs() []string { return slices.Clone(c.addrs) }

// advertised is a listener reporting another address (Options.Advertise):
// kfake advertises its listener's address.
type advertised struct {
	net.Listener
	addr net.Addr
}

func (a advertised) Addr() net.Addr { return a.addr }

// ListenerAddr returns the address the first broker really listens on
// (differs from Addr with Options.Advertise).
func (c *Cluster) ListenerAddr() string { return c.listener }

// Addr returns the first broker's address.
func (c *Cluster) Addr() string { return c.addrs[0] }

// Kfake returns the underlying cluster, for fault injection.
func (c *Cluster) Kfake() *kfake.Cluster { return c.c }

// Client returns a new franz-go client for the cluster, closed by
// t.Cleanup. Produced records are acknowledged by all replicas and keyed
// records are partitioned with Kafka's murmur2 hash.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(c.addrs...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.ProducerLinger(0),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: new client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// readIdle is how long ReadAll waits for a poll that brings no record.
const readIdle = 30 * time.Second

func ctxTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// CreateTopic creates a topic with the given number of partitions and
// replication factor 1; config entries are name/value pairs such as
// "cleanup.policy", "compact".
func (c *Cluster) CreateTopic(t testing.TB, name string, partitions int32, config ...string) {
	t.Helper()
	if len(config)%2 != 0 {
		t.Fatalf("kafkatest: CreateTopic %s: odd number of config strings", name)
	}
	cl := c.Client(t)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	for i := 0; i < len(config); i += 2 {
		cf := kmsg.NewCreateTopicsRequestTopicConfig()
		cf.Name, cf.Value = config[i], kmsg.StringPtr(config[i+1])
		rt.Configs = append(rt.Configs, cf)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := ctxTimeout()
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("kafkatest: CreateTopic %s: %v", name, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			t.Fatalf("kafkatest: CreateTopic %s: %v", name, err)
		}
	}
}

// AddPartitions grows topic to total partitions.
func (c *Cluster) AddPartitions(t testing.TB, topic string, total int32) {
	t.Helper()
	cl := c.Client(t)
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, total
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	ctx, cancel := ctxTimeout()
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("kafkatest: CreatePartitions %s: %v", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			t.Fatalf("kafkatest: CreatePartitions %s: %v", topic, err)
		}
	}
}

// TopicConfig returns the topic's configuration values that were set
// explicitly (DescribeConfigs, non-default entries).
func (c *Cluster) TopicConfig(t testing.TB, topic string) map[string]string {
	t.Helper()
	cl := c.Client(t)
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, r)
	ctx, cancel := ctxTimeout()
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("kafkatest: DescribeConfigs %s: %v", topic, err)
	}
	out := map[string]string{}
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			t.Fatalf("kafkatest: DescribeConfigs %s: %v", topic, err)
		}
		for _, cfg := range res.Configs {
			if cfg.Value != nil && cfg.Source == kmsg.ConfigSourceDynamicTopicConfig {
				out[cfg.Name] = *cfg.Value
			}
		}
	}
	return out
}

// Partitions returns the topic's partition count (0 if it does not exist).
func (c *Cluster) Partitions(t testing.TB, topic string) int32 {
	t.Helper()
	cl := c.Client(t)
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	ctx, cancel := ctxTimeout()
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("kafkatest: Metadata %s: %v", topic, err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic != nil && *rt.Topic == topic && rt.ErrorCode == 0 {
			return int32(len(rt.Partitions))
		}
	}
	return 0
}

// Record is a record as produced or read by the helpers.
type Record struct {
	Key, Value []byte
	Partition  int32
	Offset     int64
	// Compression is the codec of the batch ReadAll read the record from
	// (Kafka's attribute bits: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
	Compression uint8
}

// Produce writes records to topic and waits for their acknowledgement.
// Records are partitioned by key (Kafka's murmur2, like the Java client and
// kafka-go's Murmur2Balancer); Partition and Offset of the returned copies
// are filled in.
func (c *Cluster) Produce(t testing.TB, topic string, recs ...Record) []Record {
	t.Helper()
	return c.produce(t, c.Client(t), topic, recs)
}

// ProduceTo writes records to one partition of topic.
func (c *Cluster) ProduceTo(t testing.TB, topic string, partition int32, recs ...Record) []Record {
	t.Helper()
	for i := range recs {
		recs[i].Partition = partition
	}
	return c.produce(t, c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, recs)
}

func (c *Cluster) produce(t testing.TB, cl *kgo.Client, topic string, recs []Record) []Record {
	t.Helper()
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Partition: r.Partition}
	}
	ctx, cancel := ctxTimeout()
	defer cancel()
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		t.Fatalf("kafkatest: produce to %s: %v", topic, err)
	}
	out := make([]Record, len(recs))
	for i, kr := range krs {
		out[i] = Record{Key: kr.Key, Value: kr.Value, Partition: kr.Partition, Offset: kr.Offset}
	}
	return out
}

// Bounds are a partition's log start offset and high watermark.
type Bounds struct{ Start, End int64 }

// Offsets returns the bounds of every partition of topic.
func (c *Cluster) Offsets(t testing.TB, topic string) map[int32]Bounds {
	t.Helper()
	n := c.Partitions(t, topic)
	if n == 0 {
		t.Fatalf("kafkatest: Offsets: topic %s does not exist", topic)
	}
	cl := c.Client(t)
	out := make(map[int32]Bounds, n)
	for _, ts := range []int64{-2, -1} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for p := int32(0); p < n; p++ {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		ctx, cancel := ctxTimeout()
		shards := cl.RequestSharded(ctx, req)
		cancel()
		for _, sh := range shards {
			if sh.Err != nil {
				t.Fatalf("kafkatest: ListOffsets %s: %v", topic, sh.Err)
			}
			for _, rt := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
				for _, rp := range rt.Partitions {
					if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
						t.Fatalf("kafkatest: ListOffsets %s/%d: %v", topic, rp.Partition, err)
					}
					b := out[rp.Partition]
					if ts == -2 {
						b.Start = rp.Offset
					} else {
						b.End = rp.Offset
					}
					out[rp.Partition] = b
				}
			}
		}
	}
	return out
}

// ReadAll reads every record of topic up to the high watermarks observed
// when it starts, without a consumer group, ordered by partition and
// offset. It fails when a poll brings no record for 30 s (readIdle), not
// after a fixed time: a loaded machine decompressing a large topic under
// the race detector may need minutes, and each poll still makes progress.
func (c *Cluster) ReadAll(t testing.TB, topic string) []Record {
	t.Helper()
	bounds := c.Offsets(t, topic)
	want := 0
	parts := map[int32]kgo.Offset{}
	for p, b := range bounds {
		if b.End > b.Start {
			parts[p] = kgo.NewOffset().At(b.Start)
			want += int(b.End - b.Start)
		}
	}
	if want == 0 {
		return nil
	}
	cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	var out []Record
	for len(out) < want {
		ctx, cancel := context.WithTimeout(context.Background(), readIdle)
		fs := cl.PollFetches(ctx)
		expired := ctx.Err()
		cancel()
		before := len(out)
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < bounds[r.Partition].End {
				out = append(out, Record{Key: r.Key, Value: r.Value, Partition: r.Partition, Offset: r.Offset,
					Compression: r.Attrs.CompressionType()})
			}
		})
		var ferr error
		fs.EachError(func(_ string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = fmt.Errorf("partition %d: %w", p, err)
			}
		})
		if ferr != nil {
			t.Fatalf("kafkatest: ReadAll %s: %v", topic, ferr)
		}
		if expired != nil && len(out) == before {
			t.Fatalf("kafkatest: ReadAll %s: read %d of %d records, then nothing for %v", topic, len(out), want, readIdle)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// DeleteRecords removes the records of topic/partition below offset, so
// the partition's log start offset becomes offset.
func (c *Cluster) DeleteRecords(t testing.TB, topic string, partition int32, offset int64) {
	t.Helper()
	cl := c.Client(t)
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10000
	ctx, cancel := ctxTimeout()
	defer cancel()
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			t.Fatalf("kafkatest: DeleteRecords %s/%d: %v", topic, partition, sh.Err)
		}
		for _, rt := range sh.Resp.(*kmsg.DeleteRecordsResponse).Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					t.Fatalf("kafkatest: DeleteRecords %s/%d: %v", topic, partition, err)
				}
			}
		}
	}
}

// GroupOffsets returns the offsets committed by group for topic (absent
// partitions have none; an unknown group has none).
func (c *Cluster) GroupOffsets(t testing.TB, group, topic string) map[int32]int64 {
	t.Helper()
	cl := c.Client(t)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < c.Partitions(t, topic); p++ {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := ctxTimeout()
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("kafkatest: OffsetFetch %s: %v", group, err)
	}
	out := map[int32]int64{}
	switch err := kerr.ErrorForCode(resp.ErrorCode); {
	case errors.Is(err, kerr.GroupIDNotFound): // kfake; Kafka answers "no offsets"
		return out
	case err != nil:
		t.Fatalf("kafkatest: OffsetFetch %s: %v", group, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == 0 && rp.Offset >= 0 {
				out[rp.Partition] = rp.Offset
			}
		}
	}
	return out
}

// KcatPath returns the path of the kcat binary (or kafkacat). When neither
// is installed it skips t, or fails it if EnvRequireKcat is set.
func KcatPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(EnvRequireKcat) != "" {
		t.Fatalf("kafkatest: kcat not found in PATH and %s is set (install the Debian package kcat)", EnvRequireKcat)
	}
	t.Skipf("kafkatest: kcat not found in PATH (install the Debian package kcat, or set %s to fail instead)", EnvRequireKcat)
	return ""
}

// RunKcat runs kcat with args (and no standard input), fails t on a
// non-zero exit, and returns its standard output. It is skipped (or fails,
// see KcatPath) when kcat is missing.
func RunKcat(t testing.TB, args ...string) string {
	t.Helper()
	return RunKcatInput(t, "", args...)
}

// RunKcatInput is RunKcat with stdin as kcat's standard input (for -P).
func RunKcatInput(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	path := KcatPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || ctx.Err() != nil {
			t.Fatalf("kafkatest: kcat %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
		}
		t.Fatalf("kafkatest: running kcat: %v", err)
	}
	return stdout.String()
}
