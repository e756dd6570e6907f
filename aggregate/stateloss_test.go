package aggregate

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// groupClaim is a claim whose consumer group committed groupOffset
// (negative: none).
type groupClaim struct {
	stream.Claim
	groupOffset int64
}

func (c groupClaim) GroupOffset() (int64, bool) { return c.groupOffset, c.groupOffset >= 0 }

func TestCheckClaimedStateLoss(t *testing.T) {
	part := state.Partition{Topic: "observations", ID: 3}
	log := slog.New(slog.DiscardHandler)
	cases := []struct {
		name        string
		policy      string
		seenBefore  int64 // stored offset an earlier claim found; -1: none
		groupOffset int64
		stored      int64
		want        int64
		fatal       bool
		lost        string // metric label counted, "" none
	}{
		{"fresh partition", "", -1, -1, -1, -1, false, ""},
		{"stored offset", "", -1, 500, 400, 400, false, ""},
		{"group committed, store empty: stop", "", -1, 500, -1, 0, true, OnStateLossStop},
		{"group committed, store empty: explicit stop", OnStateLossStop, -1, 500, -1, 0, true, OnStateLossStop},
		{"group committed, store empty: replay", OnStateLossReplay, -1, 500, -1, -1, false, OnStateLossReplay},
		{"seen before, no group offset: stop", "", 700, -1, -1, 0, true, OnStateLossStop},
		{"group offset 0 is no history", "", -1, 0, -1, -1, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.OnStateLoss = c.policy
			p, _ := newTestProcessor(t, cfg, newMemory(t))
			claim := groupClaim{groupOffset: c.groupOffset}
			if c.seenBefore >= 0 {
				if _, err := p.checkClaimed(claim, part, c.seenBefore, log); err != nil {
					t.Fatal(err)
				}
			}
			got, err := p.checkClaimed(claim, part, c.stored, log)
			if c.fatal {
				if !errors.Is(err, stream.ErrFatal) || !strings.Contains(err.Error(), "ON_STATE_LOSS=replay") {
					t.Fatalf("err = %v; want a fatal error naming ON_STATE_LOSS=replay", err)
				}
			} else if err != nil || got != c.want {
				t.Fatalf("checkClaimed = %d, %v; want %d, nil", got, err, c.want)
			}
			for _, l := range []string{OnStateLossStop, OnStateLossReplay} {
				want := 0.0
				if l == c.lost {
					want = 1
				}
				var m dto.Metric
				if err := p.lossMetrics.lost.WithLabelValues(l).Write(&m); err != nil {
					t.Fatal(err)
				}
				if n := m.GetCounter().GetValue(); n != want {
					t.Errorf("state_lost_total{action=%q} = %v, want %v", l, n, want)
				}
			}
		})
	}
}

func TestConfigOnStateLoss(t *testing.T) {
	for _, v := range []string{"", OnStateLossStop, OnStateLossReplay} {
		cfg := DefaultConfig()
		cfg.OnStateLoss = v
		if err := cfg.Validate(); err != nil {
			t.Errorf("OnStateLoss %q: %v", v, err)
		}
	}
	cfg := DefaultConfig()
	cfg.OnStateLoss = "ignore"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "OnStateLoss") {
		t.Errorf("OnStateLoss \"ignore\": %v, want an error naming OnStateLoss", err)
	}
}
