// Package cliconfig gives the commands one way to read their configuration:
// environment variables through kelseyhightower/envconfig, overridden by
// command-line flags derived from the same struct, so every option has both
// and both are documented in one place (the struct's tags). It is used only
// by packages under cmd/: library packages never read the environment.
//
// A field tagged `envconfig:"BATCH_SIZE" default:"2000" desc:"..."` in a
// struct processed with prefix "CHANGERATE" is read from
// CHANGERATE_BATCH_SIZE and from the flag --batch-size; a flag given on the
// command line wins. Errors name the environment variable (and the flag when
// the value came from one).
//
// A field also tagged `file:"true"` (a secret) can be read from a file
// instead: CHANGERATE_<NAME>_FILE or --<name>-file names the file, whose
// content (without a trailing newline) becomes the value. This is how
// Kubernetes Secrets mounted as files, Docker secrets and systemd
// credentials reach a program without putting the secret in its
// environment. Setting both the variable and its _FILE is an error.
package cliconfig

import (
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/kelseyhightower/envconfig"
)

// Option describes one configuration option.
type Option struct {
	Env, Flag, Default, Desc, Type string
	// FileOf is, for a NAME_FILE option, the Env of the option it reads.
	FileOf string
}

// Options lists the options of the struct pointed to by spec, in field
// order. Nested structs are not supported: configurations are flat.
func Options(prefix string, spec any) []Option {
	t := reflect.TypeOf(spec).Elem()
	var out []Option
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("envconfig")
		if name == "" || name == "-" {
			continue
		}
		env := name
		if prefix != "" {
			env = prefix + "_" + name
		}
		flagName := strings.ReplaceAll(strings.ToLower(name), "_", "-")
		out = append(out, Option{
			Env: env, Flag: flagName,
			Default: f.Tag.Get("default"), Desc: f.Tag.Get("desc"), Type: f.Type.String(),
		})
		if f.Tag.Get("file") == "true" {
			out = append(out, Option{
				Env: env + "_FILE", Flag: flagName + "-file", Type: "string", FileOf: env,
				Desc: "file whose content (without a trailing newline) is " + env + ", e.g. a mounted Secret; exclusive with it",
			})
		}
	}
	return out
}

// Load fills spec (a pointer to a flat struct with envconfig tags) from the
// environment and then from args, parsed as flags on fs (flags may follow
// positional arguments; "--" ends them). It returns the positional
// arguments. Flags override the environment.
func Load(prefix string, spec any, fs *flag.FlagSet, args []string) ([]string, error) {
	opts := Options(prefix, spec)
	set := map[string]string{}
	byFlag := map[string]Option{}
	for _, o := range opts {
		o := o
		byFlag[o.Flag] = o
		help := o.Desc
		if o.Default != "" {
			help += " (default " + o.Default + ")"
		}
		help += " [env " + o.Env + "]"
		if o.Type == "bool" {
			fs.BoolFunc(o.Flag, help, func(v string) error { set[o.Env] = v; return nil })
			continue
		}
		fs.Func(o.Flag, help, func(v string) error { set[o.Env] = v; return nil })
	}
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	// Flags win: they replace the environment's value while envconfig
	// decodes (envconfig reads only the process environment), so a bad
	// flag value is reported like a bad variable; the environment is
	// restored afterwards.
	envs := make([]string, 0, len(set))
	for env := range set {
		envs = append(envs, env)
	}
	sort.Strings(envs)
	for _, env := range envs {
		old, had := os.LookupEnv(env)
		defer func() {
			if had {
				os.Setenv(env, old)
			} else {
				os.Unsetenv(env)
			}
		}()
		if err := os.Setenv(env, set[env]); err != nil {
			return nil, fmt.Errorf("config: %s: %w", env, err)
		}
	}
	for _, o := range opts {
		if o.FileOf == "" {
			continue
		}
		path, ok := os.LookupEnv(o.Env)
		if !ok || path == "" {
			continue
		}
		if v, ok := os.LookupEnv(o.FileOf); ok && v != "" {
			return nil, fmt.Errorf("config: %s and %s are both set; set one", optionName(prefix, o.FileOf), optionName(prefix, o.Env))
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %s: %w", optionName(prefix, o.Env), err)
		}
		val := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		old, had := os.LookupEnv(o.FileOf)
		defer func() {
			if had {
				os.Setenv(o.FileOf, old)
			} else {
				os.Unsetenv(o.FileOf)
			}
		}()
		if err := os.Setenv(o.FileOf, val); err != nil {
			return nil, fmt.Errorf("config: %s: %w", o.Env, err)
		}
	}
	if err := envconfig.Process(prefix, spec); err != nil {
		if pe, ok := err.(*envconfig.ParseError); ok {
			return nil, parseError(prefix, pe, set)
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	return rest, nil
}

// parseInterspersed parses args on fs allowing flags after positional
// arguments, as GNU programs do ("ingest access.log --format=squid"): the
// flag package alone stops at the first positional argument and would take
// every later flag for a file name. "--" ends the flags; "-" (stdin) is a
// positional argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if n := len(args) - len(left); n > 0 && args[n-1] == "--" {
			return append(rest, left...), nil
		}
		if len(left) == 0 {
			return append(rest, left...), nil
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

// parseError says which option has a value of the wrong kind, naming the
// variable and the flag, where the value came from and what is wanted, in
// words rather than Go's type and parser names (strconv.ParseInt,
// time.Duration, main.byteSize). The parser's own error is kept only for
// types with their own decoder (envconfig.Decoder), whose messages are
// written for users.
func parseError(prefix string, pe *envconfig.ParseError, set map[string]string) error {
	from := "the environment"
	if _, isFlag := set[pe.KeyName]; isFlag {
		from = "the flag"
	}
	var want string
	switch pe.TypeName {
	case "int", "int8", "int16", "int32", "int64":
		want = "a whole number"
	case "uint", "uint8", "uint16", "uint32", "uint64":
		want = "a whole number >= 0"
	case "float32", "float64":
		want = "a number"
	case "bool":
		want = "true or false"
	case "Duration", "time.Duration":
		want = "a duration such as 500ms, 30s, 10m or 1h"
	default:
		want = "a valid value"
		if pe.Err != nil {
			want += ": " + pe.Err.Error()
		}
	}
	return fmt.Errorf("config: %s = %q (from %s) is not %s", optionName(prefix, pe.KeyName), pe.Value, from, want)
}

// optionName names an option by its variable and its flag:
// "CHANGERATE_BATCH_SIZE (--batch-size)".
func optionName(prefix, env string) string {
	name := env
	if prefix != "" {
		name = strings.TrimPrefix(env, prefix+"_")
	}
	return env + " (--" + strings.ReplaceAll(strings.ToLower(name), "_", "-") + ")"
}

// WriteReference writes a Markdown table of the options, for the README.
func WriteReference(w io.Writer, prefix string, spec any) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| variable | flag | default | meaning |")
	fmt.Fprintln(tw, "|---|---|---|---|")
	for _, o := range Options(prefix, spec) {
		def := o.Default
		if def == "" {
			def = "—"
		}
		fmt.Fprintf(tw, "| `%s` | `--%s` | `%s` | %s |\n", o.Env, o.Flag, def, o.Desc)
	}
	return tw.Flush()
}

// kafkaFields maps the Kafka configuration's field names, as its
// validation errors name them, to the commands' option names.
var kafkaFields = []struct{ field, option string }{
	{"KafkaConfig.TLS.CertFile/KeyFile", "KAFKA_TLS_CERT/KAFKA_TLS_KEY"},
	{"KafkaConfig.TLS.CAFile", "KAFKA_TLS_CA"},
	{"KafkaConfig.SASL.Username", "KAFKA_SASL_USERNAME"},
	{"KafkaConfig.SASL.Mechanism", "KAFKA_SASL_MECHANISM"},
	{"KafkaConfig.SASL", "KAFKA_SASL_MECHANISM"},
	{"KafkaConfig.Brokers", "KAFKA_BROKERS"},
	{"KafkaConfig.HeartbeatInterval", "KAFKA_HEARTBEAT"},
	{"KafkaConfig.SessionTimeout", "KAFKA_SESSION_TIMEOUT"},
	{"KafkaConfig.Compression", "KAFKA_COMPRESSION"},
	{"KafkaConfig.Linger", "KAFKA_LINGER"},
	{"KafkaConfig.BatchSize", "BATCH_SIZE"},
	{"KafkaConfig.RequestTimeout", "KAFKA_REQUEST_TIMEOUT"},
	{"KafkaConfig.RebalanceTimeout", "KAFKA_REBALANCE_TIMEOUT"},
	{"KafkaConfig.FetchTimeoutSlack", "KAFKA_FETCH_TIMEOUT_SLACK"},
	{"KafkaConfig.JoinTimeout", "KAFKA_JOIN_TIMEOUT"},
	{"KafkaConfig.FetchStallTimeout", "KAFKA_FETCH_STALL_TIMEOUT"},
	{"KafkaConfig.OrphanTimeout", "KAFKA_ORPHAN_TIMEOUT"},
	{"SessionTimeout", "KAFKA_SESSION_TIMEOUT"},
}

// KafkaError rewrites a Kafka configuration error for the user: the
// fields it names become the variables and flags that set them
// ("CHANGERATE_KAFKA_BROKERS (--kafka-brokers)").
func KafkaError(prefix string, err error) string {
	msg := strings.TrimPrefix(err.Error(), "stream: ")
	for _, f := range kafkaFields {
		if !strings.Contains(msg, f.field) {
			continue
		}
		var names []string
		for _, o := range strings.Split(f.option, "/") {
			names = append(names, prefix+"_"+o+" (--"+strings.ReplaceAll(strings.ToLower(o), "_", "-")+")")
		}
		msg = strings.ReplaceAll(msg, f.field, strings.Join(names, "/"))
	}
	return strings.ReplaceAll(msg, "KafkaConfig.", "")
}
