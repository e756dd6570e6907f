// Package options declares every option of the commands once: the
// aggregator's (Aggregator) and ingest's (Ingest) declarations, and the
// groups they share — Kafka (connection, timeouts, producer), Redis,
// logging, HTTP, the shared topics and the external sort. Each option is
// an envconfig-tagged field (read by internal/cliconfig) with its unit,
// bounds (valid) and, where it sets a library's configuration, the
// library field (to); Variables derives each command's variable names
// from the declarations for the unknown-variable check.
//
// Defaults: an option that sets a library field (to) and has no default
// tag documents the library's default (cliconfig.Defaults). The shared
// connection groups map themselves (Kafka.Config, KafkaTimeouts.ApplyTo,
// Redis.Config), because some library defaults are derived from other
// fields (Kafka's watchdogs) or would select a mode (Redis's address):
// their constructors (DefaultKafka, DefaultKafkaTimeouts, DefaultRedis,
// DefaultTopics, DefaultExternalSort) set the defaults they document. A
// default tag marks a command's own default, different from or absent in
// the library's (KAFKA_LINGER, REDIS_REQUIRE_DURABLE, ...). The tests
// TestDefaultsAreTheLibrarys (here and in each command) check both kinds
// against the libraries, and TestOptionDeclarations walks every option.
//
// Errors name options as the user sets them, "CHANGERATE_X (--x)", without
// a "config:" prefix: the command adds its own.
package options

import "github.com/changerate/changerate/internal/cliconfig"

// Prefix prefixes every environment variable of the commands: an option
// has the same variable in every command that has it.
const Prefix = "CHANGERATE"

// Name names an option as the user sets it: Name("KAFKA_BROKERS") is
// "CHANGERATE_KAFKA_BROKERS (--kafka-brokers)".
func Name(option string) string { return cliconfig.OptionName(Prefix, option) }
