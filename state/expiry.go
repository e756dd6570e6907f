package state

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// withExpiredFlags returns notify-keyspace-events flags that include
// keyevent ('E') notifications of expiry ('x', also part of 'A').
func withExpiredFlags(flags string) string {
	if !strings.ContainsRune(flags, 'E') {
		flags += "E"
	}
	if !strings.ContainsRune(flags, 'x') && !strings.ContainsRune(flags, 'A') {
		flags += "x"
	}
	return flags
}

// subscribeExpired subscribes to expired-key events on every master and
// starts a goroutine per subscription that counts this store's objects.
func (r *Redis) subscribeExpired(ctx context.Context) error {
	nodes, err := r.masters(ctx)
	if err != nil {
		return fmt.Errorf("state: list masters: %w", err)
	}
	for _, n := range nodes {
		addr := n.Options().Addr
		if r.cfg.ExpiryEvents == ExpiryEventsConfig {
			if err := enableExpiredEvents(ctx, n); err != nil {
				r.log.Warn("cannot enable expired-key notifications; expiries are counted only if the server sends them",
					"addr", addr, "err", err)
			}
		}
		pattern := fmt.Sprintf("__keyevent@%d__:expired", n.Options().DB)
		ps := n.PSubscribe(ctx, pattern)
		if _, err := ps.Receive(ctx); err != nil {
			_ = ps.Close()
			return fmt.Errorf("state: subscribe %s on %s: %w", pattern, addr, err)
		}
		r.subs = append(r.subs, ps)
		ch := ps.Channel(redis.WithChannelSize(4096))
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for msg := range ch {
				if r.isObjectKey(msg.Payload) && r.inScope(msg.Payload) {
					r.expired.Add(1)
					r.metrics.expired.Inc()
				}
			}
		}()
	}
	if r.cfg.ExpiryEvents == ExpiryEventsConfig {
		r.wg.Add(1)
		go r.recheckExpiredEvents(nodes)
	}
	return nil
}

// enableExpiredEvents adds "Ex" to n's notify-keyspace-events if missing.
func enableExpiredEvents(ctx context.Context, n *redis.Client) error {
	v, err := n.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return err
	}
	old := v["notify-keyspace-events"]
	if nw := withExpiredFlags(old); nw != old {
		return n.ConfigSet(ctx, "notify-keyspace-events", nw).Err()
	}
	return nil
}

// recheckExpiredEvents re-enables the notifications every
// ExpiryEventsRecheck until Close.
func (r *Redis) recheckExpiredEvents(nodes []*redis.Client) {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.ExpiryEventsRecheck)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
		}
		for _, n := range nodes {
			ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ReadTimeout)
			if err := enableExpiredEvents(ctx, n); err != nil {
				r.log.Debug("recheck of expired-key notifications failed", "addr", n.Options().Addr, "err", err)
			}
			cancel()
		}
	}
}

// inScope reports whether an expired object key counts (ExpiryScope).
func (r *Redis) inScope(key string) bool {
	if r.cfg.ExpiryScope == ExpiryScopeAll {
		return true
	}
	end := strings.IndexByte(key, '}')
	r.ownMu.RLock()
	defer r.ownMu.RUnlock()
	return r.owned[key[:end+1]]
}

// own records whether this store owns the partition with tag.
func (r *Redis) own(tag string, owned bool) {
	r.ownMu.Lock()
	defer r.ownMu.Unlock()
	if owned {
		r.owned[tag] = true
	} else {
		delete(r.owned, tag)
	}
}

// Expired returns how many of this store's objects (by KeyPrefix) expired
// since NewRedis, as seen through keyspace notifications (see Redis).
func (r *Redis) Expired() uint64 { return r.expired.Load() }

func (r *Redis) stopSubs() {
	select {
	case <-r.done:
	default:
		close(r.done)
	}
	for _, ps := range r.subs {
		_ = ps.Close()
	}
	r.subs = nil
	r.wg.Wait()
}
