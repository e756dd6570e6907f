package options

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

// TestUnknown: a CHANGERATE_ variable that no command has is reported; one
// of either command, another program's variable and the tools' are not.
func TestUnknown(t *testing.T) {
	for _, c := range []struct {
		name    string
		environ []string
		want    []string
	}{
		{"none", nil, nil},
		{"the aggregator's", []string{"CHANGERATE_API_TOKEN=x", "CHANGERATE_REDIS_PASSWORD_FILE=/s"}, nil},
		{"ingest's", []string{"CHANGERATE_FORMAT=squid", "CHANGERATE_ZONE=UTC"}, nil},
		{"shared", []string{"CHANGERATE_KAFKA_BROKERS=k:9092"}, nil},
		{"another program's", []string{"PATH=/bin", "CHANGERATEX=1", "REDIS_ADDRS=r:6379", "FORMAT=x"}, nil},
		{"the tools'", []string{"CHANGERATE_DATA=/d", "CHANGERATE_ARTIFACT_DIR=a", "CHANGERATE_REQUIRE_REDIS=1"}, nil},
		{"misspelt", []string{"CHANGERATE_KAFKA_BROKER=k:9092", "CHANGERATE_LOG_LEVEL=info"}, []string{"CHANGERATE_KAFKA_BROKER"}},
		{"a _FILE of no secret", []string{"CHANGERATE_KAFKA_BROKERS_FILE=/b"}, []string{"CHANGERATE_KAFKA_BROKERS_FILE"}},
		{"the prefix alone, sorted, once", []string{"CHANGERATE_Z=1", "CHANGERATE_=1", "CHANGERATE_Z=2"}, []string{"CHANGERATE_", "CHANGERATE_Z"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Unknown(c.environ); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Unknown = %q, want %q", got, c.want)
			}
		})
	}
	var log bytes.Buffer
	WarnUnknown(slog.New(slog.NewTextHandler(&log, nil)), []string{"CHANGERATE_API_TOKN=x", "CHANGERATE_API_TOKEN=y"})
	if out := log.String(); strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, "variable=CHANGERATE_API_TOKN") {
		t.Errorf("WarnUnknown logged:\n%s", out)
	}
}
