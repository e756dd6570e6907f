package ingest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/stream"
)

// TestConfigDefaults pins the defaults the zero value means and checks
// that Validate reports every problem at once.
func TestConfigDefaults(t *testing.T) {
	got := Config{Format: "squid", Paths: []string{"-"}}.WithDefaults()
	want := Config{Format: "squid", Paths: []string{"-"}, Parse: parse.Config{}.WithDefaults(),
		PollInterval: DefaultPollInterval, MaxLineBytes: DefaultMaxLineBytes, MaxDecompressedBytes: DefaultMaxDecompressedBytes,
		MaxRecordBytes: DefaultMaxRecordBytes, BatchSize: DefaultBatchSize, CheckpointInterval: DefaultCheckpointInterval,
		ObservationsTopic: stream.TopicObservations, DeadLetterTopic: stream.TopicDeadLetter,
		ProgressInterval: DefaultProgressInterval, DrainTimeout: DefaultDrainTimeout}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithDefaults =\n%+v\nwant\n%+v", got, want)
	}
	// Negative intervals are settings (every batch; no progress line).
	if d := (Config{CheckpointInterval: -1, ProgressInterval: -1}).WithDefaults(); d.CheckpointInterval != -1 || d.ProgressInterval != -1 {
		t.Errorf("negative intervals not kept: %+v", d)
	}
	err := Config{Format: "nope", MaxLineBytes: 10, BatchSize: -1, DrainTimeout: -time.Second, Parse: parse.Config{Profile: "x"}}.Validate()
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("Validate = %v; want ErrConfig", err)
	}
	for _, field := range []string{"Format", "Paths", "MaxLineBytes", "BatchSize", "DrainTimeout", "Parse: parse: Profile"} {
		if !strings.Contains(err.Error(), "ingest: invalid config: "+field) {
			t.Errorf("Validate = %v; does not name %s", err, field)
		}
	}
}
