package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
)

// The sink's batched mode (KafkaConfig.Linger > 0): kafka-go's Writer
// batches the messages of concurrent Writes per partition. Write maps the
// Writer's per-message errors onto the Sink contract: permanent rejections
// are reported, and messages of a batch refused as too large are sent
// again one at a time (kafka_sink_direct.go's produce).

// writeBatched writes through kafka-go's Writer; see KafkaSink.
func (s *KafkaSink) writeBatched(ctx context.Context, msgs []Message) error {
	var rejected []Rejection
	var sent []Message // the messages given to the Writer
	var at []int       // their index in msgs
	km := make([]kafka.Message, 0, len(msgs))
	for i, m := range msgs {
		// recordSize bounds kafka-go's own size, so the Writer never
		// fails the whole call with a MessageTooLargeError.
		if r, ok := s.tooLarge(msgs, i); ok {
			rejected = append(rejected, r)
			continue
		}
		sent = append(sent, m)
		at = append(at, i)
		km = append(km, kafka.Message{Topic: m.Topic, Key: m.Key, Value: m.Value, Time: m.Time})
	}
	countLocal := true // unless Write counts every message as not written
	defer func(local []Rejection) {
		if countLocal {
			for _, r := range local {
				s.m.errors.WithLabelValues(msgs[r.Index].Topic).Inc()
			}
		}
	}(slices.Clone(rejected))
	if len(km) == 0 {
		return rejectedError(rejected)
	}
	err := s.w.WriteMessages(ctx, km...)
	if err == nil {
		s.countByTopic(sent, nil, s.m.written)
		return rejectedError(rejected)
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) && len(werrs) == len(km) {
		written := make([]bool, len(km))
		for j, e := range werrs {
			written[j] = e == nil
		}
		defer func() {
			s.countByTopic(sent, func(j int) bool { return written[j] }, s.m.written)
			s.countByTopic(sent, func(j int) bool { return !written[j] }, s.m.errors)
		}()
		var failed error
		var again []int // index in sent of messages to send one at a time
		for j, e := range werrs {
			if e == nil {
				continue
			}
			reason, isRej := rejection(e)
			switch {
			case !isRej:
				if failed == nil {
					failed = e
				}
			case sizeRejection(e):
				// The batch, which may hold other messages, was too large,
				// not necessarily this message.
				again = append(again, j)
			default:
				rejected = append(rejected, Rejection{Index: at[j], Reason: reason, Err: fmt.Errorf("stream: kafka write %s: %w", sent[j].Topic, e)})
			}
		}
		if failed != nil {
			// Report the first real cause, keeping the full WriteErrors wrapped.
			return fmt.Errorf("stream: kafka write: %d of %d messages failed, first: %v: %w", werrs.Count(), len(km), failed, err)
		}
		for _, j := range again {
			err := s.produceOne(ctx, &sent[j])
			if err == nil {
				written[j] = true
				continue
			}
			reason, isRej := rejection(err)
			if !isRej {
				return fmt.Errorf("stream: kafka write %s: resending a message of a batch refused as too large: %w", sent[j].Topic, err)
			}
			rejected = append(rejected, Rejection{Index: at[j], Reason: reason, Err: fmt.Errorf("stream: kafka write %s: %w", sent[j].Topic, err)})
		}
		return rejectedError(rejected)
	}
	var tooLarge kafka.MessageTooLargeError
	if errors.Is(err, kafka.UnknownTopicOrPartition) || errors.As(err, &tooLarge) {
		// Checked by kafka-go before anything is sent.
		countLocal = false
		return errNotWritten{fmt.Errorf("stream: kafka write: %w", err)}
	}
	s.countByTopic(sent, nil, s.m.errors)
	return fmt.Errorf("stream: kafka write: %w", err)
}

// produceOne sends m alone, with a request of its own, to the partition
// its key maps to.
func (s *KafkaSink) produceOne(ctx context.Context, m *Message) error {
	ids, err := s.partitions(ctx, m.Topic)
	if err != nil {
		return err
	}
	p := PartitionOf(m.Key, ids)
	return s.produce(ctx, m.Topic, p, []Message{*m}, []int32{0}, time.Now())
}
