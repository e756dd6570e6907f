package main

import (
	"flag"
	"io"
	"reflect"
	"testing"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/stream"
)

// TestDefaultsAreTheLibrarys: without options, the processor gets the
// aggregate package's default configuration and the Kafka client the
// stream package's defaults, where the command has no default of its own.
func TestDefaultsAreTheLibrarys(t *testing.T) {
	c := newConfig()
	fs := flag.NewFlagSet("aggregator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := cliconfig.LoadFrom(func(string) (string, bool) { return "", false }, envPrefix, &c, fs, nil); err != nil {
		t.Fatal(err)
	}
	got, want := c.processorConfig(), aggregateDefaults()
	if got.OnStateLoss != aggregate.OnStateLossStop || want.OnStateLoss != "" && want.OnStateLoss != aggregate.OnStateLossStop {
		t.Errorf("OnStateLoss %q, library's %q; want both to mean stop", got.OnStateLoss, want.OnStateLoss)
	}
	got.OnStateLoss, want.OnStateLoss = "", ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("processor configuration from the defaults:\n%+v\nwant the library's\n%+v", got, want)
	}
	kc := c.kafkaConfig()
	if kc.GroupID != stream.DefaultKafkaGroupID || kc.SessionTimeout != stream.DefaultKafkaSessionTimeout ||
		kc.HeartbeatInterval != stream.DefaultKafkaHeartbeatInterval || kc.ClientID != clientID ||
		kc.FetchMaxBytes != stream.DefaultKafkaFetchMaxBytes || kc.FetchMinBytes != stream.DefaultKafkaFetchMinBytes {
		t.Errorf("Kafka defaults %+v", kc)
	}
	if c.Topics.Observations != stream.TopicObservations || c.URLProfile != parse.ProfileChangerate {
		t.Errorf("observations topic %q, URL profile %q", c.Topics.Observations, c.URLProfile)
	}
	// The query API's: its plan's revisit bounds are the processor's.
	qc := c.queryConfig()
	for name, v := range map[string][2]any{
		"Timeout":         {qc.Timeout, query.DefaultTimeout},
		"MaxRequestBytes": {qc.MaxRequestBytes, query.DefaultMaxRequestBytes},
		"Plan.MinRevisit": {qc.Plan.MinRevisit, query.DefaultMinRevisit},
		"Plan.MaxRevisit": {qc.Plan.MaxRevisit, query.DefaultMaxRevisit},
		"Plan.Budget":     {qc.Plan.Budget, query.DefaultPlanBudget},
		"Plan.Period":     {qc.Plan.Period, query.DefaultPlanPeriod},
		"IndexObjects":    {c.APIIndexObjects, query.DefaultIndexObjects},
		"IndexAlerts":     {c.APIAlerts, query.DefaultIndexAlerts},
	} {
		if v[0] != v[1] {
			t.Errorf("query %s = %v, want the library's %v", name, v[0], v[1])
		}
	}
}

func TestByteSizeString(t *testing.T) {
	for _, s := range []string{"256MiB", "1GiB", "3KiB", "1000"} {
		var b cliconfig.ByteSize
		if err := b.Decode(s); err != nil {
			t.Fatal(err)
		}
		if b.String() != s {
			t.Errorf("Decode(%q).String() = %q", s, b.String())
		}
	}
}
