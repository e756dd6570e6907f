package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/state"
)

// TestRedisRequirements: the filter mode on a Redis without AOF or with an
// evicting policy refuses to start, naming the setting and the opt-out;
// with REDIS_REQUIRE_DURABLE=false it runs.
func TestRedisRequirements(t *testing.T) {
	in := string(cgmExample1(t)) // CGM Example 1: http://a.example/ gets a rate
	for _, tc := range []struct {
		name string
		opts []redistest.Option
		env  map[string]string
		want []string // nil: success
	}{
		{"durable", []redistest.Option{redistest.WithAOF()}, nil, nil},
		{"no AOF", nil, nil, []string{"appendonly", "CHANGERATE_REDIS_REQUIRE_DURABLE=false"}},
		{"evicting", []redistest.Option{redistest.WithAOF(), redistest.WithArgs("--maxmemory-policy", "allkeys-lru")}, nil, []string{"allkeys-lru", "noeviction"}},
		{"opt-out", nil, map[string]string{"CHANGERATE_REDIS_REQUIRE_DURABLE": "false"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.Start(t, tc.opts...)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{"--in=-", "--store=redis", "--redis-addrs=" + s.Addr, "--emit=final", "--redis-expiry-events=off"},
				strings.NewReader(in), &stdout, &stderr)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("%v\n%s", err, stderr.String())
				}
				if !strings.Contains(stdout.String(), "http://a.example/") {
					t.Errorf("no estimate written: %q", stdout.String())
				}
				return
			}
			if !errors.Is(err, state.ErrNotDurable) {
				t.Fatalf("err = %v, want ErrNotDurable", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
