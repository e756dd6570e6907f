package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// TestUnknownVariableWarning: a CHANGERATE_ variable that neither command
// has is warned about at start; the aggregator's are not.
func TestUnknownVariableWarning(t *testing.T) {
	t.Setenv("CHANGERATE_FORMATT", "squid")
	t.Setenv("CHANGERATE_API_TOKEN", "s3cret") // the aggregator's
	var stderr bytes.Buffer
	in := filepath.Join(t.TempDir(), "obs.jsonl")
	if err := os.WriteFile(in, []byte(`{"object":"http://a.example/","time":"2026-03-01T00:00:00Z","kind":"visit","digest":"sha1:1"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"--format=jsonl", in}, nil, io.Discard, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if out := stderr.String(); !strings.Contains(out, "CHANGERATE_FORMATT") || strings.Contains(out, "CHANGERATE_API_TOKEN") {
		t.Errorf("stderr does not warn about CHANGERATE_FORMATT only:\n%s", out)
	}
}
