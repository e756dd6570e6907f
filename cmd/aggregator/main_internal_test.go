package main

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestMain routes go-redis's own log lines as main does (redisClientLog), so
// that the tests calling run do not print its unstructured dial failures
// between the test results; the child process of
// TestRedisClientLogIsStructured is left to main's own installation, which
// that test checks.
func TestMain(m *testing.M) {
	if os.Getenv("AGGREGATOR_TEST_MAIN") != "1" {
		redis.SetLogger(&redisClientLog)
	}
	os.Exit(m.Run())
}
