package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

// TestConfigErrors: invalid configuration fails at start with a message
// that names the variable (and the flag when the value came from one).
func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"bad duration in the environment", map[string]string{"CHANGERATE_LATE_TOLERANCE": "soon"}, nil,
			[]string{"CHANGERATE_LATE_TOLERANCE", "soon"}},
		{"bad int flag", nil, []string{"--batch-size=many"},
			[]string{"--batch-size", "CHANGERATE_BATCH_SIZE", "many"}},
		{"unknown store", nil, []string{"--in=-", "--store=cassandra"}, []string{"CHANGERATE_STORE", "cassandra"}},
		{"redis store without addresses", nil, []string{"--in=-", "--store=redis"}, []string{"CHANGERATE_REDIS_ADDRS"}},
		{"final emission needs an input", nil, []string{"--emit=final", "--kafka-brokers=k:9092"}, []string{"CHANGERATE_EMIT", "CHANGERATE_IN"}},
		{"filter and Kafka are exclusive", nil, []string{"--in=-", "--kafka-brokers=k:9092"}, []string{"CHANGERATE_IN", "CHANGERATE_KAFKA_BROKERS"}},
		{"bad emission mode", nil, []string{"--in=-", "--emit=sometimes"}, []string{"CHANGERATE_EMIT", "--emit", "sometimes"}},
		{"bad log level", nil, []string{"--in=-", "--log-level=loud"}, []string{"CHANGERATE_LOG_LEVEL", "loud"}},
		{"p_stale out of range", nil, []string{"--in=-", "--p-stale=1.5"}, []string{"CHANGERATE_P_STALE", "--p-stale", "1.5"}},
		{"negative lateness", nil, []string{"--in=-", "--late-tolerance=-1h"}, []string{"CHANGERATE_LATE_TOLERANCE", "--late-tolerance"}},
		{"negative idle TTL", map[string]string{"CHANGERATE_IDLE_TTL": "-1s"}, []string{"--in=-"}, []string{"CHANGERATE_IDLE_TTL", "--idle-ttl"}},
		{"negative future bound", nil, []string{"--in=-", "--max-future=-1h"}, []string{"CHANGERATE_MAX_FUTURE", "--max-future"}},
		{"negative byte size", map[string]string{"CHANGERATE_INFLIGHT_BYTES": "-1"}, []string{"--in=-"}, []string{"CHANGERATE_INFLIGHT_BYTES", "--inflight-bytes", "cannot be negative"}},
		{"batch size zero", nil, []string{"--in=-", "--batch-size=0"}, []string{"CHANGERATE_BATCH_SIZE", "--batch-size"}},
		{"unknown state-loss policy", nil, []string{"--in=-", "--on-state-loss=ignore"}, []string{"CHANGERATE_ON_STATE_LOSS", "ignore"}},
		{"negative fetch stall bound", nil, []string{"--kafka-brokers=k:9092", "--kafka-fetch-stall-timeout=-1s"}, []string{"CHANGERATE_KAFKA_FETCH_STALL_TIMEOUT", "--kafka-fetch-stall-timeout"}},
		{"flags win over the environment", map[string]string{"CHANGERATE_STORE": "memory"}, []string{"--in=-", "--store=etcd"}, []string{"CHANGERATE_STORE", "etcd"}},
		{"positional argument", nil, []string{"obs.jsonl"}, []string{"no arguments", "obs.jsonl", "CHANGERATE_IN", "--in"}},
		{"flag after a positional argument", nil, []string{"obs.jsonl", "--in=-"}, []string{"no arguments", "obs.jsonl"}},
		// Every message names the variable and the flag, never a Go field.
		{"Redis options checked before Kafka is reached", nil, []string{"--http-addr=", "--kafka-brokers=127.0.0.1:1", "--redis-addrs=127.0.0.1:2", "--redis-db=-1"},
			[]string{"CHANGERATE_REDIS_DB", "--redis-db"}},
		{"unreachable Kafka", nil, []string{"--http-addr=", "--kafka-brokers=127.0.0.1:1", "--store=memory"},
			[]string{"CHANGERATE_KAFKA_BROKERS", "--kafka-brokers", "127.0.0.1:1"}},
		{"Redis key format", nil, []string{"--in=-", "--store=redis", "--redis-addrs=127.0.0.1:1", "--redis-key-format=x"}, []string{"CHANGERATE_REDIS_KEY_FORMAT", "--redis-key-format"}},
		{"Redis TLS files without TLS", nil, []string{"--in=-", "--store=redis", "--redis-addrs=127.0.0.1:1", "--redis-tls-ca=/ca.pem", "--redis-expiry-events=x"},
			[]string{"CHANGERATE_REDIS_TLS", "--redis-tls", "CHANGERATE_REDIS_EXPIRY_EVENTS", "--redis-expiry-events"}},
		{"bad float in the environment", map[string]string{"CHANGERATE_ALERT_FDR": "x"}, []string{"--in=-"}, []string{"CHANGERATE_ALERT_FDR", "--alert-fdr", "not a number"}},
		{"bad byte size", nil, []string{"--in=-", "--cache-bytes=12QB"}, []string{"CHANGERATE_CACHE_BYTES", "--cache-bytes", "256MiB"}},
		{"seasonal decay out of range", nil, []string{"--in=-", "--seasonal-decay=0"}, []string{"CHANGERATE_SEASONAL_DECAY", "--seasonal-decay"}},
		{"unknown URL profile", nil, []string{"--in=-", "--url-profile=x"}, []string{"CHANGERATE_URL_PROFILE", "--url-profile"}},
		{"small API request limit", nil, []string{"--in=-", "--api-max-request-bytes=2"}, []string{"CHANGERATE_API_MAX_REQUEST_BYTES", "--api-max-request-bytes"}},
		{"negative API alerts", nil, []string{"--in=-", "--api-alerts=-1"}, []string{"CHANGERATE_API_ALERTS", "--api-alerts"}},
		{"revisit bounds", nil, []string{"--in=-", "--max-revisit=1m"}, []string{"CHANGERATE_MAX_REVISIT", "--max-revisit", "CHANGERATE_MIN_REVISIT", "--min-revisit"}},
		{"plan period", nil, []string{"--in=-", "--plan-period=1s"}, []string{"CHANGERATE_PLAN_PERIOD", "--plan-period"}},
		{"HTTP address", nil, []string{"--in=-", "--http-addr=nowhere"}, []string{"CHANGERATE_HTTP_ADDR", "--http-addr"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), c.args, strings.NewReader(""), &stdout, &stderr)
			if err == nil {
				t.Fatalf("no error; stderr %s", stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			for _, internal := range []string{"strconv", "time.Duration", "main.", "Config.", "PoolSites", "Profile ", "MaxRequestBytes", "_*", "KeyFormat", "ExpiryEvents", "TLS.Enable", "(*Client)"} {
				if strings.Contains(err.Error(), internal) {
					t.Errorf("error %q shows Go's %q", err, internal)
				}
			}
		})
	}
}

// TestFilterMode runs the SPEC's command-line contract in process:
// aggregator --in=- --store=memory --out=- --emit=final.
func TestFilterMode(t *testing.T) {
	var in bytes.Buffer
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	enc := json.NewEncoder(&in)
	// A page visited daily for 11 days, changed at 6 of the 10 visits after
	// the first: CGM Example 1, improved estimate −log(4.5/10.5) per day.
	changed := []bool{true, false, true, true, false, true, false, true, false, true}
	for i := 0; i <= 10; i++ {
		o := records.Observation{Object: "http://a.example/", Time: t0.Add(time.Duration(i) * 24 * time.Hour), Kind: records.KindVisit,
			Changed: records.Unchanged} // the first visit is the baseline
		if i > 0 {
			o.Changed = records.Unchanged
			if changed[i-1] {
				o.Changed = records.Changed
			}
		}
		if err := enc.Encode(o); err != nil {
			t.Fatal(err)
		}
	}
	in.WriteString("not json\n")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--in=-", "--store=memory", "--out=-", "--emit=final", "--log-level=error"}, &in, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one estimate, got %d lines:\n%s", len(lines), stdout.String())
	}
	var e records.Estimate
	if err := json.Unmarshal([]byte(lines[0]), &e); err != nil {
		t.Fatal(err)
	}
	perDay := e.Estimates["cgm_improved"] * 86400
	if want := 0.8473; perDay < want-1e-4 || perDay > want+1e-4 || e.Observations != 11 || e.Changes != 6 {
		t.Errorf("cgm_improved %.4f/day (want %.4f), observations %d, changes %d", perDay, want, e.Observations, e.Changes)
	}
	if !strings.Contains(stderr.String(), `"reason":"decode"`) {
		t.Errorf("the bad line did not reach the dead-letter output (stderr):\n%s", stderr.String())
	}
}

// TestDemo runs the embedded default on a small sample: in-process Kafka,
// ingest of generated logs, the aggregator, and the printed table.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process Kafka broker")
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// --demo: the Kafka timeouts are service settings, which the demo
	// accepts when asked for but never guesses from (mode.go).
	err := run(ctx, []string{"--demo", "--demo-exit", "--demo-pages=1", "--demo-days=4", "--http-addr=127.0.0.1:0", "--log-level=warn",
		"--partitions=3", "--kafka-session-timeout=6s", "--kafka-heartbeat=500ms"}, strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"TRUE MEAN TIME", "news.example.org/two-hourly/story-00.html", "shop.example.com/weekly/item-00",
		"median |log(estimated/true rate)| over", "access rates"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
