package options

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/changerate/changerate/internal/cliconfig"
)

// Commands are the commands' option declarations, in the order Closest
// breaks ties in: an option of the aggregator before one of ingest.
var commands = []struct {
	name string
	spec func() any
}{
	{"aggregator", func() any { a := DefaultAggregator("changerate-aggregator"); return &a }},
	{"ingest", func() any { i := DefaultIngest("changerate-ingest"); return &i }},
}

// Variables lists a command's options as its --config-reference does
// (names without the prefix, *_FILE twins included), from its declaration
// (Aggregator, Ingest): a new option is known here without being listed.
func Variables(command string) []string {
	for _, c := range commands {
		if c.name == command {
			var out []string
			for _, o := range cliconfig.Options(Prefix, c.spec()) {
				out = append(out, o.Name())
			}
			return out
		}
	}
	return nil
}

// toolVariables are read by the repository's tests and tools, not by the
// commands (internal/realdata, the artefact directory, the
// CHANGERATE_REQUIRE_* switches of internal/redistest, kafkatest and the
// browser tests): a developer's environment holds them.
var (
	toolVariables = []string{"DATA", "ARTIFACT_DIR"}
	toolPrefixes  = []string{"REQUIRE_"}
)

// Unknown returns the names of the variables of environ ("NAME=value", as
// os.Environ gives them) that have the prefix and are no option of any
// command, sorted: a misspelt option, or one that does not exist (a
// *_FILE of an option that is not a secret), which would otherwise be
// ignored without a word. A variable of the other command is not unknown:
// the same environment (a shared ConfigMap, a shell) may serve both.
func Unknown(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		opt, ok := strings.CutPrefix(name, Prefix+"_")
		if !ok || known(opt) {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func known(name string) bool {
	for _, c := range commands {
		if slices.Contains(Variables(c.name), name) {
			return true
		}
	}
	if slices.Contains(toolVariables, name) {
		return true
	}
	for _, p := range toolPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// WarnUnknown logs a warning for every variable of environ that Unknown
// returns. It is not an error: the variable may be meant for a newer
// version of the other command.
func WarnUnknown(logger *slog.Logger, environ []string) {
	for _, name := range Unknown(environ) {
		logger.Warn("environment variable ignored: no option of the aggregator or of ingest has this name (misspelt? only secrets have a *_FILE variable; -h lists the options)",
			"variable", name)
	}
}
