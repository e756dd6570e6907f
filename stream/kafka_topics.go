package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/segmentio/kafka-go"
)

// TopicSpec describes a topic for EnsureTopics.
type TopicSpec struct {
	// Name of the topic. Required.
	Name string
	// Partitions is the partition count. Default (0):
	// DefaultTopicPartitions (1).
	Partitions int
	// ReplicationFactor is the number of replicas. Default (0): the
	// broker's default.replication.factor.
	ReplicationFactor int
	// Compacted sets cleanup.policy=compact (the estimates topic: the
	// latest value per key is kept forever). Default false (delete).
	Compacted bool
	// Config holds further topic configuration, e.g. "retention.ms".
	// Default none.
	Config map[string]string
}

// DefaultTopicPartitions is the partition count of a TopicSpec whose
// Partitions is zero.
const DefaultTopicPartitions = 1

// WithDefaults returns a copy of s with DefaultTopicPartitions in place of
// a zero Partitions. A zero ReplicationFactor stays zero: it asks for the
// broker's default, which only the broker knows.
func (s TopicSpec) WithDefaults() TopicSpec {
	if s.Partitions == 0 {
		s.Partitions = DefaultTopicPartitions
	}
	return s
}

// Validate reports every invalid field of s at once (errors.Join), each
// error naming the field. Zero values are valid and mean the default,
// except Name, which is required.
func (s TopicSpec) Validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("stream: TopicSpec.Name: a topic name is required"))
	}
	if s.Partitions < 0 {
		errs = append(errs, fmt.Errorf("stream: TopicSpec.Partitions of %q: negative value %d", s.Name, s.Partitions))
	}
	if s.ReplicationFactor < 0 {
		errs = append(errs, fmt.Errorf("stream: TopicSpec.ReplicationFactor of %q: negative value %d", s.Name, s.ReplicationFactor))
	}
	return errors.Join(errs...)
}

// DefaultTopics returns the pipeline's topics with their default names:
// observations, access-reports, alerts, dead-letter and late with the given
// partition count and replication factor, and estimates compacted.
func DefaultTopics(partitions, replicationFactor int) []TopicSpec {
	return []TopicSpec{
		{Name: TopicObservations, Partitions: partitions, ReplicationFactor: replicationFactor},
		{Name: TopicEstimates, Partitions: partitions, ReplicationFactor: replicationFactor, Compacted: true},
		{Name: TopicAccessReports, Partitions: partitions, ReplicationFactor: replicationFactor},
		{Name: TopicAlerts, Partitions: partitions, ReplicationFactor: replicationFactor},
		{Name: TopicDeadLetter, Partitions: partitions, ReplicationFactor: replicationFactor},
		{Name: TopicLate, Partitions: partitions, ReplicationFactor: replicationFactor},
	}
}

// EnsureTopics creates the topics of specs that do not exist yet and
// returns the names it created. Existing topics are left unchanged, even
// if their partition count or configuration differs from the spec (changing
// the partition count of a keyed topic would move keys between
// partitions). It is safe to run concurrently from several processes: a
// topic created by someone else in the meantime is not an error. Invalid
// specs (TopicSpec.Validate) are all reported before anything is created.
func EnsureTopics(ctx context.Context, cfg KafkaConfig, specs []TopicSpec) (created []string, err error) {
	k, err := newKafkaClients(cfg)
	if err != nil {
		return nil, err
	}
	defer k.close()
	names := make([]string, 0, len(specs))
	var invalid []error
	for _, s := range specs {
		if err := s.Validate(); err != nil {
			invalid = append(invalid, err)
		}
		names = append(names, s.Name)
	}
	if err := errors.Join(invalid...); err != nil {
		return nil, err
	}
	meta, err := k.client.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return nil, fmt.Errorf("stream: EnsureTopics: metadata: %w", err)
	}
	exists := map[string]bool{}
	for _, t := range meta.Topics {
		if t.Error == nil {
			exists[t.Name] = true
		} else if !errors.Is(t.Error, kafka.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("stream: EnsureTopics: metadata for %s: %w", t.Name, t.Error)
		}
	}
	var req kafka.CreateTopicsRequest
	for _, s := range specs {
		if exists[s.Name] {
			continue
		}
		s = s.WithDefaults()
		tc := kafka.TopicConfig{Topic: s.Name, NumPartitions: s.Partitions, ReplicationFactor: -1}
		if s.ReplicationFactor > 0 {
			tc.ReplicationFactor = s.ReplicationFactor
		}
		if s.Compacted {
			tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"})
		}
		for name, v := range s.Config {
			tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: name, ConfigValue: v})
		}
		req.Topics = append(req.Topics, tc)
	}
	if len(req.Topics) == 0 {
		return nil, nil
	}
	resp, err := k.client.CreateTopics(ctx, &req)
	if err != nil {
		return nil, fmt.Errorf("stream: EnsureTopics: create: %w", err)
	}
	var errs []string
	for _, tc := range req.Topics {
		switch err := resp.Errors[tc.Topic]; {
		case err == nil:
			created = append(created, tc.Topic)
		case errors.Is(err, kafka.TopicAlreadyExists):
		default:
			errs = append(errs, fmt.Sprintf("%s: %v", tc.Topic, err))
		}
	}
	if len(errs) > 0 {
		return created, fmt.Errorf("stream: EnsureTopics: %s", strings.Join(errs, "; "))
	}
	return created, nil
}

// IsUnknownTopic reports whether err, from KafkaSink.Write, means that a
// topic written to does not exist (after the sink waited for it): nothing
// was written, and creating the topic is the remedy.
func IsUnknownTopic(err error) bool { return errors.Is(err, kafka.UnknownTopicOrPartition) }
