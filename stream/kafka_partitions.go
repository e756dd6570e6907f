package stream

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// TopicPartitions returns the partition ids of topic from the brokers'
// metadata (with cfg's TLS and SASL settings). The query API uses it to
// find the partition, and so the state, of an object: producers partition
// by key with kafka.Murmur2Balancer over these ids (see KafkaSink).
func TopicPartitions(ctx context.Context, cfg KafkaConfig, topic string) ([]int, error) {
	k, err := newKafkaClients(cfg)
	if err != nil {
		return nil, err
	}
	defer k.close()
	md, err := k.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("stream: partitions of %s: %w", topic, err)
	}
	var ids []int
	for _, t := range md.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("stream: partitions of %s: %w", topic, t.Error)
		}
		for _, p := range t.Partitions {
			ids = append(ids, p.ID)
		}
	}
	return ids, nil
}
