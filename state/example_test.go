package state_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/changerate/changerate/state"
	"github.com/prometheus/client_golang/prometheus"
)

// A partition handler claims its partition with its generation, reads the
// states it needs, and commits the batch's states with the offset range.
// A handler of an older generation is fenced.
func ExampleMemory() {
	ctx := context.Background()
	s, err := state.NewMemory(state.MemoryConfig{IdleTTL: 24 * time.Hour}, nil)
	if err != nil {
		panic(err)
	}
	p := state.Partition{Topic: "observations", ID: 0}

	next, _ := s.Claim(ctx, p, 1) // generation 1
	fmt.Println("start at", next)
	err = s.Commit(ctx, p, 1, next, 100, []state.Write{{Object: "http://a/", Value: []byte{1}}})
	fmt.Println("commit:", err)

	next, _ = s.Claim(ctx, p, 2) // the partition moved to generation 2
	fmt.Println("generation 2 starts at", next)
	err = s.Commit(ctx, p, 1, 100, 200, nil)
	fmt.Println("generation 1 fenced:", errors.Is(err, state.ErrFenced))
	err = s.Commit(ctx, p, 2, 50, 200, nil)
	fmt.Println("stale offset:", errors.Is(err, state.ErrOffsetMismatch))

	v, _ := s.Get(ctx, p, []string{"http://a/", "http://b/"}, nil)
	fmt.Println(v)
	// Output:
	// start at -1
	// commit: <nil>
	// generation 2 starts at 100
	// generation 1 fenced: true
	// stale offset: true
	// [[1] []]
}

// A Redis Cluster store with an ACL user, TLS and compact keys.
func ExampleNewRedis() {
	cfg := state.RedisConfig{
		Addrs:     []string{"redis-0.redis:6379", "redis-1.redis:6379", "redis-2.redis:6379"},
		Cluster:   true,
		Username:  "aggregator",
		Password:  "from a Secret",
		TLS:       state.RedisTLS{Enable: true, CAFile: "/etc/redis-tls/ca.crt"},
		KeyFormat: state.KeyFormatCompact,
		IdleTTL:   30 * 24 * time.Hour,
	}
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	s, err := state.NewRedis(cfg, slog.Default(), prometheus.NewRegistry())
	if err != nil {
		fmt.Println(err) // no such servers here
		return
	}
	defer s.Close()
}
