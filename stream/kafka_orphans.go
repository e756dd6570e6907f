package stream

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// Orphaned partitions. A coordinator that keeps a dead member in the group
// (for example one killed during its JoinGroup; third_party/kfake/PATCH.md
// describes such a coordinator) leaves that member's partitions assigned
// and unconsumed, and no rebalance comes: the live members heartbeat
// normally. No member can see that another one is dead, but every member
// can see the group's progress: the offsets the members commit (every
// CommitInterval, after each durable batch) and the high watermarks.
//
// watchOrphans, run in every generation, restarts the group incarnation
// (this member leaves and joins again with a fresh member ID, so that the
// coordinator rebalances and drops the members that do not rejoin within
// the rebalance timeout) when a partition this member does not own has had
// input waiting (high watermark above the committed offset) and no
// committed progress for OrphanTimeout, while this member's own partitions
// are healthy (caught up or progressing: a store outage that stalls every
// member must not cause rebalances). Each restart is counted as
// changerate_kafka_group_restarts_total{reason="orphaned_partition"} and
// logged.

// RestartOrphaned is the restart reason of a generation ended because a
// partition owned by another member made no progress.
const RestartOrphaned = "orphaned_partition"

type orphanKey struct {
	topic     string
	partition int
}

type orphanSeen struct {
	committed int64
	since     time.Time // when committed last changed, or input was caught up
}

func (s *KafkaSource) watchOrphans(runCtx, gctx context.Context, gen int32, claims []*kafkaClaim) {
	cfg := &s.k.cfg
	if cfg.OrphanTimeout < 0 {
		return
	}
	ctx, cancel := context.WithCancel(runCtx)
	defer cancel()
	stop := context.AfterFunc(gctx, cancel)
	defer stop()
	owned := map[orphanKey]*kafkaClaim{}
	for _, c := range claims {
		owned[orphanKey{c.topic, int(c.partition)}] = c
	}
	seen := map[orphanKey]orphanSeen{}
	t := time.NewTicker(cfg.MetadataInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		committed, hw, err := s.groupProgress(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Debug("orphan watch: offsets failed", "err", err)
			continue
		}
		now := time.Now()
		healthy := true
		var orphan string
		for k, h := range hw {
			c := max(committed[k], 0)
			if cl := owned[k]; cl != nil {
				// The group's offset of a partition this member owns
				// lags when the batch was already stored by an earlier
				// owner: what this member fetched is its progress.
				c = max(c, cl.fetched.Load(), cl.marked.Load())
			}
			prev, ok := seen[k]
			if !ok || c != prev.committed || c >= h {
				seen[k] = orphanSeen{committed: c, since: now}
				continue
			}
			if now.Sub(prev.since) <= cfg.OrphanTimeout {
				continue
			}
			if owned[k] != nil {
				healthy = false
			} else if orphan == "" {
				orphan = fmt.Sprintf("%s/%d: committed offset %d, high watermark %d, no progress for %v", k.topic, k.partition,
					c, h, now.Sub(prev.since).Round(time.Second))
			}
		}
		if orphan != "" && healthy {
			// Rejoining with the same member ID would not do: the
			// coordinator answers a stable follower's identical join
			// without a rebalance. Leaving does rebalance, and members
			// that do not rejoin are dropped.
			s.log.Warn("a partition owned by another member makes no progress (a dead member the coordinator keeps?); "+
				"leaving and rejoining with a fresh member ID so that the group rebalances",
				"generation", gen, "partition", orphan, "bound", cfg.OrphanTimeout)
			s.wd.restartGroup(RestartOrphaned, orphan)
			<-ctx.Done()
			return
		}
	}
}

// groupProgress returns the group's committed offsets (absent: none) and
// the high watermarks of every partition of the source's topics.
func (s *KafkaSource) groupProgress(ctx context.Context) (committed, hw map[orphanKey]int64, err error) {
	counts, err := s.partitionCounts(ctx)
	if err != nil {
		return nil, nil, err
	}
	parts := map[string][]int{}
	lreq := map[string][]kafka.OffsetRequest{}
	for topic, n := range counts {
		for p := 0; p < n; p++ {
			parts[topic] = append(parts[topic], p)
			lreq[topic] = append(lreq[topic], kafka.LastOffsetOf(p))
		}
	}
	of, err := s.k.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: s.k.cfg.GroupID, Topics: parts})
	if err != nil {
		return nil, nil, err
	}
	if of.Error != nil {
		return nil, nil, of.Error
	}
	lo, err := s.k.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: lreq})
	if err != nil {
		return nil, nil, err
	}
	committed, hw = map[orphanKey]int64{}, map[orphanKey]int64{}
	for topic, ps := range of.Topics {
		for _, p := range ps {
			if p.Error == nil && p.CommittedOffset >= 0 {
				committed[orphanKey{topic, p.Partition}] = p.CommittedOffset
			}
		}
	}
	for topic, ps := range lo.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, nil, fmt.Errorf("list offsets %s/%s: %w", topic, strconv.Itoa(p.Partition), p.Error)
			}
			hw[orphanKey{topic, p.Partition}] = p.LastOffset
		}
	}
	return committed, hw, nil
}
