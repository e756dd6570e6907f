package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// TopicPartitions returns the partition ids of topic from the brokers'
// metadata (with cfg's TLS and SASL settings). The query API uses it to
// find the partition, and so the state, of an object: producers partition
// by key with PartitionOf over these ids (see KafkaSink).
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

// idleRead is how long ReadTopic waits for the next message of a partition
// before it takes the partition as read.
const idleRead = 10 * time.Second

// ReadTopic calls fn with the messages of every partition of topic, in
// offset order per partition, from the partition's start (tail <= 0) or
// its last tail messages, up to its end when ReadTopic was called: a
// snapshot, for example of a compacted topic to rebuild a table from. It
// uses cfg's TLS and SASL settings and no consumer group.
func ReadTopic(ctx context.Context, cfg KafkaConfig, topic string, tail int64, fn func(Message) error) error {
	k, err := newKafkaClients(cfg)
	if err != nil {
		return err
	}
	defer k.close()
	ids, err := TopicPartitions(ctx, cfg, topic)
	if err != nil {
		return err
	}
	for _, id := range ids {
		res, err := k.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
			topic: {kafka.FirstOffsetOf(id), kafka.LastOffsetOf(id)}}})
		if err != nil {
			return fmt.Errorf("stream: offsets of %s/%d: %w", topic, id, err)
		}
		var first, end int64
		for _, po := range res.Topics[topic] {
			if po.Error != nil {
				return fmt.Errorf("stream: offsets of %s/%d: %w", topic, id, po.Error)
			}
			first, end = po.FirstOffset, po.LastOffset
		}
		if tail > 0 && end-tail > first {
			first = end - tail
		}
		if end <= first {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: k.cfg.Brokers, Topic: topic, Partition: id, Dialer: k.dialer,
			MaxWait: 500 * time.Millisecond})
		if err := r.SetOffset(first); err != nil {
			r.Close()
			return fmt.Errorf("stream: read %s/%d: %w", topic, id, err)
		}
		for {
			// A compacted partition may lack its last offsets (deleted
			// tombstones): no message for idleRead ends the partition.
			rctx, cancel := context.WithTimeout(ctx, idleRead)
			m, err := r.ReadMessage(rctx)
			cancel()
			if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				break
			}
			if err != nil {
				r.Close()
				return fmt.Errorf("stream: read %s/%d: %w", topic, id, err)
			}
			if err := fn(Message{Topic: topic, Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value, Time: m.Time}); err != nil {
				r.Close()
				return err
			}
			if m.Offset+1 >= end {
				break
			}
		}
		r.Close()
	}
	return nil
}
