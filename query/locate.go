package query

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// Locator maps an object to the input partition whose state holds it.
type Locator interface {
	Locate(ctx context.Context, object string) (state.Partition, error)
}

// SinglePartition locates every object in partition 0 of Topic: the filter
// mode's one input.
type SinglePartition struct{ Topic string }

// Locate implements Locator.
func (s SinglePartition) Locate(context.Context, string) (state.Partition, error) {
	return state.Partition{Topic: s.Topic}, nil
}

// KafkaLocator locates objects as the producers of the observations topic
// partition them: stream.PartitionOf on the key (the object), as
// stream.KafkaSink writes them, over the topic's partitions. The partition
// list is read with Partitions and cached for Refresh (default 1 minute).
type KafkaLocator struct {
	Topic      string
	Partitions func(ctx context.Context) ([]int, error)
	Refresh    time.Duration

	mu   sync.Mutex
	ids  []int
	when time.Time
}

// Locate implements Locator.
func (k *KafkaLocator) Locate(ctx context.Context, object string) (state.Partition, error) {
	ids, err := k.partitions(ctx)
	if err != nil {
		return state.Partition{}, err
	}
	id := stream.PartitionOf([]byte(object), ids)
	return state.Partition{Topic: k.Topic, ID: int32(id)}, nil
}

func (k *KafkaLocator) partitions(ctx context.Context) ([]int, error) {
	refresh := k.Refresh
	if refresh <= 0 {
		refresh = time.Minute
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ids != nil && time.Since(k.when) < refresh {
		return k.ids, nil
	}
	ids, err := k.Partitions(ctx)
	if err == nil && len(ids) == 0 {
		err = fmt.Errorf("topic %s has no partitions", k.Topic)
	}
	if err != nil {
		if k.ids != nil {
			return k.ids, nil // keep answering with the last known layout
		}
		return nil, fmt.Errorf("query: partitions of %s: %w", k.Topic, err)
	}
	sort.Ints(ids)
	k.ids, k.when = ids, time.Now()
	return ids, nil
}
