package aggregate

import "log/slog"

// WithLocalInput tells the Processor that its claims are of a local input
// (the aggregator's filter mode: a file or stdin, one partition, offsets
// that are line numbers, nothing stored before): the "partition claimed"
// line, whose generation and stored offset (-1) mean something only for
// Kafka, is logged at debug level instead of info.
func WithLocalInput() Option {
	return func(p *Processor) { p.claimLevel = slog.LevelDebug }
}
