package options

import (
	"errors"
	"fmt"

	"github.com/changerate/changerate/internal/extsort"
	"github.com/changerate/changerate/stream"
)

// Topics are the topics of both commands: ingest writes observations and
// dead letters; the aggregator reads the observations and writes dead
// letters of its own.
type Topics struct {
	Observations string `envconfig:"OBSERVATIONS_TOPIC" desc:"topic of the observations (ingest's output, the aggregator's input)"`
	DeadLetter   string `envconfig:"DEAD_LETTER_TOPIC" desc:"topic of dead letters: inputs that cannot be used, with the reason"`
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
	Memory int64  `envconfig:"SORT_MEMORY" desc:"sorting observations by event time (the aggregator's filter mode with SORT, ingest's ORDER=time): bytes sorted in memory; beyond, sorted runs spill to SORT_DIR"`
	Dir    string `envconfig:"SORT_DIR" desc:"directory of the sort's spilled runs (default: the system temporary directory)"`
}

// DefaultExternalSort holds internal/extsort's default memory budget.
func DefaultExternalSort() ExternalSort { return ExternalSort{Memory: extsort.DefaultMemory} }

// Validate reports a negative memory budget.
func (s ExternalSort) Validate() error {
	if s.Memory < 0 {
		return fmt.Errorf("%s must be 0 (the default) or more bytes, got %d", Name("SORT_MEMORY"), s.Memory)
	}
	return nil
}
