package main

import (
	"context"
	"strings"
	"testing"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/state"
)

// TestFloorBuckets reads the run's partitions and bucket count from the
// meta hashes: the stored count when every partition has one, the default
// layout's for a per-object run (no count stored), an error when the
// partitions disagree.
func TestFloorBuckets(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	e := &env{rc: srv.Client}
	for _, c := range []struct {
		name      string
		metas     map[string]string // meta key → nb ("": none stored)
		parts, nb int
		err       string
	}{
		{"bucketed", map[string]string{"{a}:meta": "128", "{b}:meta": "128", "{c}:meta": "128"}, 3, 128, ""},
		{"per-object", map[string]string{"{a}:meta": "", "{b}:meta": ""}, 2, state.DefaultBuckets, ""},
		{"mixed", map[string]string{"{a}:meta": "64", "{b}:meta": ""}, 0, 0, "1 of 2 partitions"},
		{"disagree", map[string]string{"{a}:meta": "64", "{b}:meta": "128"}, 0, 0, "bucket count"},
		{"none", map[string]string{}, 0, 0, "no partition meta hash"},
	} {
		if err := srv.Client.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for k, nb := range c.metas {
			fields := []any{"epoch", "1"}
			if nb != "" {
				fields = append(fields, "nb", nb)
			}
			if err := srv.Client.HSet(ctx, k, fields...).Err(); err != nil {
				t.Fatal(err)
			}
		}
		parts, nb, err := floorBuckets(ctx, e)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || parts != c.parts || nb != c.nb {
			t.Errorf("%s: %d partitions × %d buckets (%v), want %d × %d", c.name, parts, nb, err, c.parts, c.nb)
		}
	}
}
