package redistest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
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

// TestMissingBinary runs a child test that starts a server from a missing
// binary: it must be skipped without CHANGERATE_REQUIRE_REDIS and fail with
// it.
func TestMissingBinary(t *testing.T) {
	if os.Getenv("REDISTEST_CHILD") != "" {
		redistest.Start(t, redistest.WithBinary("/nonexistent/redis-server"))
		t.Log("not reached")
		return
	}
	for _, c := range []struct {
		require  string
		wantFail bool
		wantOut  string
	}{
		{"", false, "--- SKIP: TestMissingBinary"},
		{"1", true, "--- FAIL: TestMissingBinary"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingBinary$", "-test.v")
		cmd.Env = append(withoutVar(os.Environ(), redistest.RequireEnv), "REDISTEST_CHILD=1")
		if c.require != "" {
			cmd.Env = append(cmd.Env, redistest.RequireEnv+"="+c.require)
		}
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.wantFail || !strings.Contains(string(out), c.wantOut) || strings.Contains(string(out), "not reached") {
			t.Errorf("%s=%q: err %v, output:\n%s", redistest.RequireEnv, c.require, err, out)
		}
	}
}

func withoutVar(env []string, name string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}

func TestLaunchWithoutTB(t *testing.T) {
	if !redistest.Available() {
		t.Skip("no redis-server")
	}
	s, err := redistest.Launch()
	if err != nil {
		t.Fatal(err)
	}
	dir := s.Dir
	if err := s.Client.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory %s not removed: %v", dir, err)
	}
	if _, err := redistest.Launch(redistest.WithBinary("/nonexistent")); !errors.Is(err, redistest.ErrNoRedis) {
		t.Fatalf("Launch with a missing binary = %v; want ErrNoRedis", err)
	}
}
