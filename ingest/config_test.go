package ingest

import (
	"errors"
	"os"
	"path/filepath"
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
		ProgressInterval: DefaultProgressInterval, DrainTimeout: DefaultDrainTimeout,
		RetryBackoff: DefaultRetryBackoff, WriteRetryTimeout: DefaultWriteRetryTimeout}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithDefaults =\n%+v\nwant\n%+v", got, want)
	}
	// Negative intervals are settings (every batch; no progress line).
	if d := (Config{CheckpointInterval: -1, ProgressInterval: -1}).WithDefaults(); d.CheckpointInterval != -1 || d.ProgressInterval != -1 {
		t.Errorf("negative intervals not kept: %+v", d)
	}
	err := Config{Format: "nope", MaxLineBytes: 10, BatchSize: -1, DrainTimeout: -time.Second, RetryBackoff: -1, WriteRetryTimeout: -1, Parse: parse.Config{Profile: "x"}}.Validate()
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("Validate = %v; want ErrConfig", err)
	}
	for _, field := range []string{"Format", "Paths", "MaxLineBytes", "BatchSize", "DrainTimeout", "RetryBackoff", "WriteRetryTimeout", "Parse: parse: Profile"} {
		if !strings.Contains(err.Error(), "ingest: invalid config: "+field) {
			t.Errorf("Validate = %v; does not name %s", err, field)
		}
	}
}

// TestConfigCheckpointDir: a checkpoint whose directory does not exist is
// a configuration error, not a failure after reading everything.
func TestConfigCheckpointDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		name, path, want string // want "": valid
	}{
		{"missing directory", "/nonexistent/cp", `CheckpointPath "/nonexistent/cp": its directory: stat /nonexistent`},
		{"file as directory", filepath.Join(file, "cp"), file + " is not a directory"},
		{"existing directory", filepath.Join(dir, "cp"), ""},
		{"working directory", "cp.json", ""},
		{"none", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Config{Format: "squid", Paths: []string{"-"}, CheckpointPath: tc.path}.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want ErrConfig and %q", err, tc.want)
			}
		})
	}
}
