package options

import (
	"errors"
	"fmt"
	"os"

	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/internal/extsort"
	"github.com/changerate/changerate/stream"
)

// Topics are the topics of both commands: ingest writes observations and
// dead letters; the aggregator reads the observations and writes dead
// letters of its own.
type Topics struct {
	Observations string `envconfig:"OBSERVATIONS_TOPIC" to:"ingest:ObservationsTopic" desc:"topic of the observations (ingest's output, the aggregator's input)"`
	DeadLetter   string `envconfig:"DEAD_LETTER_TOPIC" to:"aggregate:DeadLetterTopic,ingest:DeadLetterTopic" desc:"topic of dead letters: inputs that cannot be used, with the reason"`
}

// DefaultTopics are the stream package's topic names.
func DefaultTopics() Topics {
	return Topics{Observations: stream.TopicObservations, DeadLetter: stream.TopicDeadLetter}
}

// Validate reports every empty topic name.
func (t Topics) Validate() error {
	var errs []error
	for _, c := range []struct{ name, value string }{{"OBSERVATIONS_TOPIC", t.Observations}, {"DEAD_LETTER_TOPIC", t.DeadLetter}} {
		if c.value == "" {
			errs = append(errs, fmt.Errorf("%s must be a topic name, got \"\"", Name(c.name)))
		}
	}
	return errors.Join(errs...)
}

// ExternalSort is the external sort of observations by event time: the
// aggregator's in filter mode with SORT, ingest's with ORDER=time.
type ExternalSort struct {
	Memory cliconfig.ByteSize `envconfig:"SORT_MEMORY" desc:"sorting observations by event time (the aggregator's filter mode with SORT, ingest's ORDER=time): bytes sorted in memory, e.g. 1GiB; beyond, sorted runs spill to SORT_DIR"`
	Dir    string             `envconfig:"SORT_DIR" desc:"directory of the sort's spilled runs (default: the system temporary directory)"`
}

// DefaultExternalSort holds internal/extsort's default memory budget.
func DefaultExternalSort() ExternalSort {
	return ExternalSort{Memory: cliconfig.ByteSize(extsort.DefaultMemory)}
}

// Validate reports a negative memory budget and a spill directory that is
// not an existing directory (found at start, not when the sort first
// spills, after reading much of the input).
func (s ExternalSort) Validate() error {
	var errs []error
	if s.Memory < 0 {
		// 0 is also extsort's default (extsort.New).
		errs = append(errs, fmt.Errorf("%s must be a size of 0 or more bytes (0: the default, %v), got %d", Name("SORT_MEMORY"),
			cliconfig.ByteSize(extsort.DefaultMemory), int64(s.Memory)))
	}
	if s.Dir != "" {
		if fi, err := os.Stat(s.Dir); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", Name("SORT_DIR"), err))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("%s: %s is not a directory", Name("SORT_DIR"), s.Dir))
		}
	}
	return errors.Join(errs...)
}
