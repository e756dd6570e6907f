package options

import (
	"flag"
	"fmt"
	"io"
	"os"

	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/cliconfig"
)

// unbounded lists the numeric options without a valid tag, with where
// their values are checked instead.
var unbounded = map[string]string{
	"API_MAX_REQUEST_BYTES":     "0 (the default) or at least 256: validateQuery",
	"MAX_REVISIT":               "at least MIN_REVISIT: validateQuery",
	"REDIS_DB":                  "state.RedisConfig.Validate (options.RedisError)",
	"SORT_MEMORY":               "options.ExternalSort.Validate",
	"KAFKA_SESSION_TIMEOUT":     "stream.KafkaConfig.Validate (options.KafkaError)",
	"KAFKA_HEARTBEAT":           "stream.KafkaConfig.Validate (options.KafkaError)",
	"KAFKA_REBALANCE_TIMEOUT":   "stream.KafkaConfig.Validate (options.KafkaError)",
	"KAFKA_REQUEST_TIMEOUT":     "stream.KafkaConfig.Validate (options.KafkaError)",
	"KAFKA_FETCH_TIMEOUT_SLACK": "stream.KafkaConfig.Validate (options.KafkaError)",
	"KAFKA_FETCH_LINGER":        "stream.KafkaConfig.Validate (options.KafkaError)",
	"KAFKA_FETCH_MIN_BYTES":     "stream.KafkaConfig.Validate (options.KafkaError)",
	"KAFKA_FETCH_MAX_BYTES":     "stream.KafkaConfig.Validate (options.KafkaError)",
	"KAFKA_JOIN_TIMEOUT":        "stream.KafkaConfig.Validate (options.KafkaError)",
	"KAFKA_ORPHAN_TIMEOUT":      "negative disables: any value",
	"KAFKA_FETCH_STALL_TIMEOUT": "stream.KafkaConfig.Validate (options.KafkaError)",
	"CHECKPOINT_INTERVAL":       "any: 0 or less writes after every batch",
	"PROGRESS_INTERVAL":         "any: negative turns the progress line off",
}

// TestOptionDeclarations walks both commands' declarations (Aggregator,
// Ingest and the groups they embed): every option has a variable and a
// flag of its name, help, a default (its own, its library field's, or
// help saying what its absence means), a unit if it is a number of
// something, a row in docs/configuration.md's table, and bounds that
// cliconfig.Check (which both commands' validation runs) enforces: a
// value just outside them fails naming the option.
func TestOptionDeclarations(t *testing.T) {
	docs, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range commands {
		for _, o := range cliconfig.Options(Prefix, cmd.spec()) {
			t.Run(cmd.name+"/"+o.Name(), func(t *testing.T) {
				if o.Env != Prefix+"_"+o.Name() || o.Flag != strings.ReplaceAll(strings.ToLower(o.Name()), "_", "-") {
					t.Errorf("variable %s, flag --%s", o.Env, o.Flag)
				}
				if o.Desc == "" {
					t.Error("no help (desc tag)")
				}
				if !strings.Contains(string(docs), fmt.Sprintf("| `%s` | `--%s` |", o.Env, o.Flag)) {
					t.Error("not in docs/configuration.md's table")
				}
				if o.FileOf != "" {
					return
				}
				num := numberType(o.Type)
				if num && o.Unit == "" && o.Type != "time.Duration" && o.Type != "cliconfig.ByteSize" {
					t.Errorf("a number (%s) without a unit tag", o.Type)
				}
				if num && o.Default == "" && len(o.To) == 0 && !strings.Contains(o.Desc, "default") && !strings.Contains(o.Desc, "0:") {
					t.Error("no default, no library field, and the help does not say what its absence means")
				}
				if o.Valid == "" {
					if num && unbounded[o.Name()] == "" {
						t.Error("a number without a valid tag or a check listed in unbounded")
					}
					return
				}
				for _, bad := range outside(t, o) {
					spec := cmd.spec()
					fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
					fs.SetOutput(io.Discard)
					_, err := cliconfig.LoadFrom(func(string) (string, bool) { return "", false }, Prefix, spec, fs,
						[]string{"--" + o.Flag + "=" + bad})
					if err == nil {
						err = cliconfig.Check(Prefix, spec)
					}
					if err == nil || !strings.Contains(err.Error(), Name(o.Name())) {
						t.Errorf("%s=%s (valid %q): error %v does not name the option", o.Env, bad, o.Valid, err)
					}
				}
			})
		}
	}
}

// numberType says whether an option's Go type is a number.
func numberType(typ string) bool {
	switch typ {
	case "int", "int64", "float64", "time.Duration", "cliconfig.ByteSize":
		return true
	}
	return false
}

// outside returns values just outside each bound of o's valid tag, or a
// value that is none of its alternatives.
func outside(t *testing.T, o cliconfig.Option) []string {
	if strings.Contains(o.Valid, "|") {
		return []string{"no-such-value"}
	}
	var out []string
	for _, c := range strings.Fields(o.Valid) {
		op := strings.TrimRight(c[:2], "0123456789.-")
		v := c[len(op):]
		var step float64 = 1
		if o.Type == "float64" {
			step = 0.5
		}
		switch o.Type {
		case "time.Duration":
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatal(err)
			}
			switch op {
			case ">=":
				d -= time.Millisecond
			case "<=":
				d += time.Millisecond
			}
			out = append(out, d.String())
		default:
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			switch op {
			case ">=":
				x -= step
			case "<=":
				x += step
			}
			if o.Type != "float64" {
				out = append(out, strconv.FormatInt(int64(x), 10))
				continue
			}
			out = append(out, strconv.FormatFloat(x, 'g', -1, 64))
		}
	}
	return out
}
