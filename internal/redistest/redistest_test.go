package redistest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/changerate/changerate/internal/redistest"
)

func TestStandaloneKillRestartAOF(t *testing.T) {
	s := redistest.Start(t, redistest.WithAOF())
	ctx := context.Background()
	if s.Port == 6379 {
		t.Fatalf("must not use 6379")
	}
	if err := s.Client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Everything written before SIGKILL reached the kernel (not an OS crash).
	s.Kill()
	if err := s.Client.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING answered after Kill")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Client.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after restart: %q, %v; want v", got, err)
	}
	cfg, err := s.Client.ConfigGet(ctx, "appendfsync").Result()
	if err != nil || cfg["appendfsync"] != "everysec" {
		t.Fatalf("appendfsync = %v, %v", cfg, err)
	}
}

func TestPasswordAndACL(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t, redistest.WithPassword("s3cret"))
	if err := s.Client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	a := redistest.Start(t, redistest.WithACLUser("alice", "pw", true))
	who, err := a.Client.Do(ctx, "ACL", "WHOAMI").Text()
	if err != nil || who != "alice" {
		t.Fatalf("whoami = %q, %v", who, err)
	}
}

func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx := context.Background()
	info, err := c.Client.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_size:3") {
		t.Fatalf("cluster info: %v %q", err, info)
	}
	for i := 0; i < 100; i++ {
		k := "key" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if err := c.Client.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
