package state_test

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/changerate/changerate/internal/redistest"
)

// Servers shared by all tests of the package (each store uses its own key
// prefix), started on first use and stopped by TestMain.
var shared struct {
	onceS, onceC sync.Once
	srv          *redistest.Server
	cl           *redistest.Cluster
	errS, errC   error
	extra        []*redistest.Server // stopped by TestMain
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		_ = shared.srv.Stop()
	}
	if shared.cl != nil {
		_ = shared.cl.Stop()
	}
	for _, s := range shared.extra {
		_ = s.Stop()
	}
	os.Exit(code)
}

// skipOrFail handles a failure to start Redis like redistest.Start does.
func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, redistest.ErrNoRedis) && os.Getenv(redistest.RequireEnv) == "" {
		t.Skipf("%v (set %s to make this fatal)", err, redistest.RequireEnv)
	}
	t.Fatal(fmt.Errorf("start redis: %w", err))
}

// sharedServer returns the package's standalone redis-server.
func sharedServer(t testing.TB) *redistest.Server {
	t.Helper()
	shared.onceS.Do(func() { shared.srv, shared.errS = redistest.Launch() })
	if shared.errS != nil {
		skipOrFail(t, shared.errS)
	}
	return shared.srv
}

// sharedCluster returns the package's 3-master cluster.
func sharedCluster(t testing.TB) *redistest.Cluster {
	t.Helper()
	shared.onceC.Do(func() { shared.cl, shared.errC = redistest.LaunchCluster(3) })
	if shared.errC != nil {
		skipOrFail(t, shared.errC)
	}
	return shared.cl
}
