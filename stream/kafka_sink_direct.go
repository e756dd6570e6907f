package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/changerate/changerate/internal/backoff"
	"github.com/segmentio/kafka-go"
)

// The sink's direct mode (KafkaConfig.Linger 0): each Write is grouped by
// partition and sent at once with kafka-go's Client, one produce request
// per chunk of BatchSize/BatchBytes, partitions in parallel; retriable
// errors are retried up to WriteAttempts times, and a request refused
// for its records is split down to the records refused on their own. The
// partition metadata cache and produce are shared with the batched mode
// (kafka_sink_batched.go).

// writeDirect sends one request per partition chunk; see KafkaSink.
func (s *KafkaSink) writeDirect(ctx context.Context, msgs []Message) error {
	type tp struct {
		topic     string
		partition int
	}
	cfg := &s.k.cfg
	// The messages' groups, in the order of their first message. A
	// topic's partitions are looked up once per Write (and group by a
	// slice indexed by partition, not a map): a batch's thousands of
	// estimates go to one topic.
	type topicGroups struct {
		topic string
		ids   []int
		group []int32 // by index in ids: the group's index in order, -1: none yet
	}
	var (
		order    []tp
		groups   [][]int32 // by index in order
		topics   []topicGroups
		tooLarge []Rejection
	)
	cur := -1
	for i := range msgs {
		m := &msgs[i]
		if cur < 0 || topics[cur].topic != m.Topic {
			cur = slices.IndexFunc(topics, func(t topicGroups) bool { return t.topic == m.Topic })
			if cur < 0 {
				ids, err := s.partitions(ctx, m.Topic)
				if err != nil {
					return fmt.Errorf("stream: kafka write: topic %s: %w", m.Topic, errNotWritten{err})
				}
				g := make([]int32, len(ids))
				for k := range g {
					g[k] = -1
				}
				cur = len(topics)
				topics = append(topics, topicGroups{topic: m.Topic, ids: ids, group: g})
			}
		}
		if r, ok := s.tooLarge(msgs, i); ok {
			tooLarge = append(tooLarge, r)
			continue
		}
		t := &topics[cur]
		k := partitionIndex(m.Key, len(t.ids)) // partition t.ids[k]: PartitionOf
		if t.group[k] < 0 {
			t.group[k] = int32(len(order))
			order = append(order, tp{m.Topic, t.ids[k]})
			groups = append(groups, nil)
		}
		groups[t.group[k]] = append(groups[t.group[k]], int32(i))
	}
	for _, r := range tooLarge {
		s.m.errors.WithLabelValues(msgs[r.Index].Topic).Inc()
	}
	now := time.Now()
	errs := make([]error, len(order))
	rejs := make([][]Rejection, len(order))
	var wg sync.WaitGroup
	for gi, key := range order {
		idx := groups[gi]
		wg.Add(1)
		go func() {
			defer wg.Done()
			written, total := 0, len(idx)
			defer func() {
				s.m.written.WithLabelValues(key.topic).Add(float64(written))
				s.m.errors.WithLabelValues(key.topic).Add(float64(total - written))
			}()
			// send sends idx in order; a request refused as a whole is
			// split in halves (the left one first, keeping the order)
			// until the refused records are alone.
			var send func(idx []int32) error
			send = func(idx []int32) error {
				err := s.produce(ctx, key.topic, key.partition, msgs, idx, now)
				if err == nil {
					written += len(idx)
					return nil
				}
				reason, ok := rejection(err)
				if !ok {
					return err
				}
				if len(idx) > 1 {
					h := len(idx) / 2
					if err := send(idx[:h]); err != nil {
						return err
					}
					return send(idx[h:])
				}
				for _, i := range idx {
					rejs[gi] = append(rejs[gi], Rejection{Index: int(i), Reason: reason,
						Err: fmt.Errorf("stream: kafka write %s/%d: %w", key.topic, key.partition, err)})
				}
				return nil
			}
			for len(idx) > 0 {
				n, size := 0, int64(0)
				for n < len(idx) && n < cfg.BatchSize {
					rs := recordSize(&msgs[idx[n]])
					if n > 0 && size+rs > cfg.BatchBytes {
						break
					}
					size += rs
					n++
				}
				if err := send(idx[:n]); err != nil {
					errs[gi] = fmt.Errorf("stream: kafka write %s/%d: %w", key.topic, key.partition, err)
					return // later chunks are not sent
				}
				idx = idx[n:]
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, r := range rejs {
		tooLarge = append(tooLarge, r...)
	}
	return rejectedError(tooLarge)
}

// produce sends msgs[idx] to one partition, retrying retriable errors.
func (s *KafkaSink) produce(ctx context.Context, topic string, partition int, msgs []Message, idx []int32, now time.Time) error {
	cfg := &s.k.cfg
	wait := backoff.New(cfg.RetryBackoff, time.Second) // exponential with jitter
	for attempt := 1; ; attempt++ {
		resp, err := s.k.client.Produce(ctx, &kafka.ProduceRequest{
			Topic:        topic,
			Partition:    partition,
			RequiredAcks: kafka.RequireAll,
			Records:      &messageRecords{msgs: msgs, idx: idx, now: now},
			Compression:  s.codec,
		})
		if err == nil && resp.Error != nil {
			err = resp.Error
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var kerr kafka.Error
		if attempt >= cfg.WriteAttempts || (errors.As(err, &kerr) && !kerr.Temporary()) {
			return err
		}
		s.retries.WithLabelValues(topic).Inc()
		s.log.Warn("kafka produce failed; retrying", "topic", topic, "partition", partition, "attempt", attempt, "err", err)
		if sleepCtx(ctx, wait.Next()) != nil {
			return ctx.Err()
		}
	}
}

// messageRecords reads msgs[idx] as Kafka records (a message without a
// time gets now), without an allocation per record: kafka-go's encoder
// (protocol.forEachRecord) copies each record's key and value into the
// request, then closes them, before it reads the next record, so one
// Record and its two byte readers serve every record. kafka.NewRecordReader
// takes a slice of Records and copies it (two slices per request), and
// kafka.NewBytes allocates a reader per key and value (two allocations per
// output record, 280 bytes per message with the slices in
// BenchmarkKafkaSinkWrite). A reader is read once; each produce attempt
// makes its own.
type messageRecords struct {
	msgs       []Message
	idx        []int32
	now        time.Time
	rec        kafka.Record
	key, value recordBytes
}

func (r *messageRecords) ReadRecord() (*kafka.Record, error) {
	if len(r.idx) == 0 {
		return nil, io.EOF
	}
	m := &r.msgs[r.idx[0]]
	r.idx = r.idx[1:]
	r.rec = kafka.Record{Time: m.Time}
	if r.rec.Time.IsZero() {
		r.rec.Time = r.now
	}
	if m.Key != nil { // nil: a null key, as kafka.NewBytes(nil)
		r.key.Reset(m.Key)
		r.rec.Key = &r.key
	}
	if m.Value != nil {
		r.value.Reset(m.Value)
		r.rec.Value = &r.value
	}
	return &r.rec, nil
}

// recordBytes is a kafka.Bytes over a slice (what kafka.NewBytes returns,
// reusable): bytes.Reader's Len and WriteTo (io.Copy's fast path), and a
// Close that does nothing.
type recordBytes struct{ bytes.Reader }

func (*recordBytes) Close() error { return nil }

// partitions returns the partition IDs of topic, from a cache refreshed
// every MetadataInterval (itself fed by kafka-go's metadata cache).
func (s *KafkaSink) partitions(ctx context.Context, topic string) ([]int, error) {
	s.metaMu.Lock()
	tp, ok := s.meta[topic]
	s.metaMu.Unlock()
	if ok && time.Since(tp.at) < s.k.cfg.MetadataInterval {
		return tp.ids, nil
	}
	meta, err := s.k.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, err
	}
	for _, t := range meta.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, t.Error
		}
		if len(t.Partitions) == 0 {
			return nil, kafka.UnknownTopicOrPartition
		}
		ids := make([]int, len(t.Partitions))
		for i := range ids {
			ids[i] = i // as kafka-go's Writer: partitions 0..n-1
		}
		s.metaMu.Lock()
		s.meta[topic] = topicPartitions{ids: ids, at: time.Now()}
		s.metaMu.Unlock()
		return ids, nil
	}
	return nil, kafka.UnknownTopicOrPartition
}
