package main

import (
	"io"
	"testing"

	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/internal/extsort"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/stream"
)

// TestDefaultsAreTheLibrarys: without options, the command configures the
// libraries with their own defaults, where it has no default of its own.
func TestDefaultsAreTheLibrarys(t *testing.T) {
	o, kc, paths, err := configure([]string{"--format=squid", "a.log"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ingestConfig(o, paths)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string][2]any{
		"MaxLineBytes":         {cfg.MaxLineBytes, ingest.DefaultMaxLineBytes},
		"MaxDecompressedBytes": {cfg.MaxDecompressedBytes, int64(ingest.DefaultMaxDecompressedBytes)},
		"MaxRecordBytes":       {cfg.MaxRecordBytes, int64(ingest.DefaultMaxRecordBytes)},
		"BatchSize":            {cfg.BatchSize, ingest.DefaultBatchSize},
		"CheckpointInterval":   {cfg.CheckpointInterval, ingest.DefaultCheckpointInterval},
		"PollInterval":         {cfg.PollInterval, ingest.DefaultPollInterval},
		"ProgressInterval":     {cfg.ProgressInterval, ingest.DefaultProgressInterval},
		"DrainTimeout":         {cfg.DrainTimeout, ingest.DefaultDrainTimeout},
		"ObservationsTopic":    {cfg.ObservationsTopic, stream.TopicObservations},
		"DeadLetterTopic":      {cfg.DeadLetterTopic, stream.TopicDeadLetter},
		"Profile":              {o.Profile, parse.ProfileChangerate},
		"SortMemory":           {int64(o.ExternalSort.Memory), int64(extsort.DefaultMemory)},
		// BATCH_SIZE also bounds the Kafka sink's batches: both libraries'
		// defaults agree.
		"KafkaConfig.BatchSize": {kc.BatchSize, stream.DefaultKafkaBatchSize},
	} {
		if v[0] != v[1] {
			t.Errorf("%s = %v, want the library's %v", name, v[0], v[1])
		}
	}
	if kc.ClientID != clientID || kc.GroupID != clientID {
		t.Errorf("Kafka client id %q, group %q; want %q", kc.ClientID, kc.GroupID, clientID)
	}
}
