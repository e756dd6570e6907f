package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/internal/monitoringtest"
	"github.com/changerate/changerate/internal/redistest"
)

// TestAlertMetricsExistAtStart: every metric of the aggregator that the
// deploy bundle's alerting rules and dashboard use (read from the files) is
// exported from the start — on the registry of a service-mode aggregator
// wired as runService does (Redis store, Kafka source and sink, processor),
// before any event — with a series for each label value a rule selects, so
// that rate() and the alerts see it moving up from 0. Only the per-partition
// series, which exist for owned partitions, are left out.
func TestAlertMetricsExistAtStart(t *testing.T) {
	rs := redistest.Start(t)
	cfg := newConfig()
	fs := flag.NewFlagSet("aggregator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// Nothing connects to Kafka before the source runs: any address does.
	args := []string{"--kafka-brokers=127.0.0.1:1", "--redis-addrs=" + rs.Addr, "--redis-require-durable=false"}
	if _, err := cliconfig.LoadFrom(func(string) (string, bool) { return "", false }, envPrefix, &cfg, fs, args); err != nil {
		t.Fatal(err)
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Store != "redis" {
		t.Fatalf("store %q, want redis", cfg.Store)
	}
	logger := slog.New(slog.DiscardHandler)
	reg := newRegistry()
	store, err := openStore(context.Background(), &cfg, logger, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	kp, err := newKafkaPipeline(&cfg, cfg.kafkaConfig(), store, logger, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer kp.close()

	series := monitoringtest.Gather(t, reg)
	n := 0
	for _, r := range monitoringtest.Refs(t, monitoringtest.Root(t)) {
		if monitoringtest.Program(r.Metric) != "aggregator" || monitoringtest.PerPartition[r.Metric] {
			continue
		}
		n++
		t.Run(r.Where+": "+r.String(), func(t *testing.T) {
			if err := series.Check(r); err != nil {
				t.Error(err)
			}
		})
	}
	if n == 0 {
		t.Fatal("no aggregator metric in the rules and dashboards")
	}
}
