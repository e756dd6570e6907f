package redistest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/changerate/changerate/internal/redistest"
)

// In a test or benchmark: a private server with AOF, killed and restarted.
func ExampleStart() {
	testAOF := func(t *testing.T) {
		s := redistest.Start(t, redistest.WithAOF()) // stopped at t.Cleanup
		ctx := context.Background()
		s.Client.Set(ctx, "k", "v", 0)
		s.Kill() // SIGKILL
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		if s.Client.Get(ctx, "k").Val() != "v" {
			t.Fatal("lost k")
		}
	}
	_ = testAOF
}

// From a command (no testing.TB): the caller stops the cluster.
func ExampleLaunchCluster() {
	c, err := redistest.LaunchCluster(3)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Stop()
	fmt.Println(len(c.Addrs), "masters at", c.Addrs)
}
