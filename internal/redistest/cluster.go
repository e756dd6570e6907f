package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a local Redis Cluster of masters without replicas, created
// with redis-cli --cluster create.
type Cluster struct {
	// Nodes are the masters, in creation order.
	Nodes []*Server
	// Addrs are the nodes' addresses.
	Addrs []string
	// Client is a cluster client of all nodes, closed by Stop.
	Client *redis.ClusterClient

	ownDir string
}

// StartCluster starts a cluster of n masters (n ≥ 3, as redis-cli
// requires) for tb, waits until every node reports cluster_state:ok and
// knows all n nodes, and stops it at tb.Cleanup. Skips and failures are as
// for Start. WithBinary, WithAOF and WithArgs apply to every node;
// WithPassword, WithACLUser, WithTLS and WithDir are not supported.
func StartCluster(tb testing.TB, n int, opts ...Option) *Cluster {
	tb.Helper()
	skipIfMissing(tb, opts)
	dir := tb.TempDir()
	c, err := launchCluster(dir, n, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("redistest: stop cluster: %v", err)
		}
	})
	return c
}

// LaunchCluster is StartCluster without testing.TB: the caller must call
// Stop, which removes the temporary directory.
func LaunchCluster(n int, opts ...Option) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "redistest-cluster-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	c, err := launchCluster(dir, n, opts...)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c.ownDir = dir
	return c, nil
}

func launchCluster(dir string, n int, opts ...Option) (*Cluster, error) {
	if n < 3 {
		return nil, fmt.Errorf("redistest: a cluster needs at least 3 masters, got %d", n)
	}
	c := &Cluster{}
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, "node"+strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("redistest: %w", err)
		}
		o := append([]Option{}, opts...)
		o = append(o, WithDir(d), func(o *options) { o.clusterPort = 1 })
		s, err := Launch(o...)
		if err != nil {
			_ = c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if _, e := os.Stat("/usr/bin/redis-cli"); e == nil {
			cli = "/usr/bin/redis-cli"
		} else {
			_ = c.Stop()
			return nil, fmt.Errorf("redistest: redis-cli not found: %w", err)
		}
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command(cli, args...).CombinedOutput()
	if err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %w: %s", err, out)
	}
	if err := c.waitOK(n); err != nil {
		_ = c.Stop()
		return nil, err
	}
	c.Client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.Client.ForEachShard(ctx, func(ctx context.Context, sh *redis.Client) error {
		return sh.Ping(ctx).Err()
	}); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("redistest: cluster client: %w", err)
	}
	return c, nil
}

// waitOK waits until every node reports cluster_state:ok and n known nodes.
func (c *Cluster) waitOK(n int) error {
	deadline := time.Now().Add(startTimeout)
	for {
		ok := true
		var last string
		for _, s := range c.Nodes {
			info, err := s.Client.ClusterInfo(context.Background()).Result()
			if err != nil {
				ok, last = false, err.Error()
				break
			}
			if !strings.Contains(info, "cluster_state:ok") ||
				!strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r") {
				ok, last = false, info
				break
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: cluster not ok within %v: %s", startTimeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops every node and closes Client. It is idempotent.
func (c *Cluster) Stop() error {
	var errs []error
	if c.Client != nil {
		if err := c.Client.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			errs = append(errs, err)
		}
		c.Client = nil
	}
	for _, s := range c.Nodes {
		if err := s.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ownDir != "" {
		_ = os.RemoveAll(c.ownDir)
		c.ownDir = ""
	}
	return errors.Join(errs...)
}
