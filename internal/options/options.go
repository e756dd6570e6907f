// Package options declares the option groups of the commands once —
// Kafka (connection, timeouts, producer), Redis, logging, the shared
// topics and the external sort: envconfig-tagged structs (read by
// internal/cliconfig) that a command's configuration embeds, each with a
// method producing the library's configuration (stream.KafkaConfig,
// state.RedisConfig, *slog.Logger) or a Validate that reports every
// invalid option.
//
// Defaults: a field whose default is the library's has no default tag;
// the group's constructor (DefaultKafka, DefaultKafkaTimeouts,
// DefaultRedis, DefaultTopics, DefaultExternalSort) sets it from the library's exported default, and
// cliconfig documents that value and keeps it unless the option is given.
// A default tag marks a command's own default, different from or absent
// in the library's (KAFKA_LINGER, REDIS_REQUIRE_DURABLE, ...). The test
// TestDefaultsAreTheLibrarys checks both kinds against the libraries.
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
