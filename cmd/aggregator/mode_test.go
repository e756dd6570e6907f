package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/internal/options"
)

// TestChooseMode: the demo runs when asked for (--demo, or no option but
// the demo's own); any other setting without KAFKA_BROKERS or IN is an
// error naming it, and a misspelt variable is an error in every mode.
func TestChooseMode(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		mode    string   // "" for an error
		errHas  []string // in the error
		unknown bool     // the environment holds an unknown variable
	}{
		{name: "nothing", mode: modeDemo},
		{name: "demo options only", args: []string{"--demo-pages=1", "--http-addr=:0", "--partitions=2", "--alert-fdr=0.1"}, mode: modeDemo},
		{name: "explicit demo", args: []string{"--demo"}, mode: modeDemo},
		{name: "service", env: map[string]string{"CHANGERATE_KAFKA_BROKERS": "k:9092", "CHANGERATE_REDIS_ADDRS": "r:6379"}, mode: modeService},
		{name: "filter", args: []string{"--in=-"}, mode: modeFilter},
		{name: "ingest's variable is not the aggregator's", env: map[string]string{"CHANGERATE_FORMAT": "squid"}, mode: modeDemo},
		{name: "issue 32: typo of KAFKA_BROKERS", env: map[string]string{"CHANGERATE_KAFKA_BROKER": "127.0.0.1:37165", "CHANGERATE_REDIS_ADDRS": "127.0.0.1:16379"},
			errHas: []string{"CHANGERATE_KAFKA_BROKER: did you mean CHANGERATE_KAFKA_BROKERS?"}, unknown: true},
		{name: "typo in service mode", env: map[string]string{"CHANGERATE_KAFKA_BROKERS": "k:9092", "CHANGERATE_REDIS_ADDR": "r:6379"},
			errHas: []string{"CHANGERATE_REDIS_ADDR: did you mean CHANGERATE_REDIS_ADDRS?"}, unknown: true},
		{name: "Redis without Kafka", env: map[string]string{"CHANGERATE_REDIS_ADDRS": "r:6379"},
			errHas: []string{"(CHANGERATE_REDIS_ADDRS)", "service mode needs CHANGERATE_KAFKA_BROKERS"}},
		{name: "Redis flag without Kafka", args: []string{"--redis-addrs=r:6379", "--store=redis"},
			errHas: []string{"CHANGERATE_STORE, CHANGERATE_REDIS_ADDRS"}},
		{name: "a filter output without input", args: []string{"--out=-"}, errHas: []string{"(CHANGERATE_OUT)"}},
		{name: "far unknown variable keeps the demo from being guessed", env: map[string]string{"CHANGERATE_NOT_AN_OPTION_OF_ANY_KIND": "1"},
			errHas: []string{"unknown variables set (CHANGERATE_NOT_AN_OPTION_OF_ANY_KIND)"}, unknown: true},
		{name: "far unknown variable in service mode is a warning", env: map[string]string{"CHANGERATE_KAFKA_BROKERS": "k:9092", "CHANGERATE_NOT_AN_OPTION_OF_ANY_KIND": "1"},
			mode: modeService, unknown: true},
		{name: "demo with service settings", args: []string{"--demo", "--kafka-brokers=k:9092", "--kafka-heartbeat=1s"},
			errHas: []string{"would ignore CHANGERATE_KAFKA_BROKERS:"}},
		{name: "explicit demo with its consumer's timeouts", args: []string{"--demo", "--kafka-rebalance-timeout=6s"}, mode: modeDemo},
		{name: "other Kafka timeouts alone are no demo", args: []string{"--kafka-rebalance-timeout=6s"},
			errHas: []string{"(CHANGERATE_KAFKA_REBALANCE_TIMEOUT), but no mode"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newConfig()
			fs := flag.NewFlagSet("aggregator", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			if _, err := cliconfig.LoadFrom(lookup, envPrefix, &cfg, fs, tc.args); err != nil {
				t.Fatal(err)
			}
			var environ []string
			for k, v := range tc.env {
				environ = append(environ, k+"="+v)
			}
			unknown := options.Unknown(environ)
			if got := len(unknown) > 0; got != tc.unknown {
				t.Fatalf("unknown variables %q, want some: %v", unknown, tc.unknown)
			}
			mode, err := chooseMode(&cfg, given(&cfg, fs, lookup), unknown)
			if mode != tc.mode {
				t.Fatalf("mode %q (err %v), want %q", mode, err, tc.mode)
			}
			for _, s := range tc.errHas {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Errorf("error %v does not contain %q", err, s)
				}
			}
			if tc.mode != "" && err != nil {
				t.Errorf("mode %q with error %v", mode, err)
			}
		})
	}
}

// TestMisconfiguredServiceRefusesToStart runs the binary as issue 32 did:
// service-mode variables, one of them misspelt. It must exit with status 2
// at once, naming the variable and the option it is close to, and never
// start the demo (which would say "demo:" in its log and serve HTTP).
func TestMisconfiguredServiceRefusesToStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildAggregator(t)
	httpAddr := freeAddr(t)
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CHANGERATE_HTTP_ADDR=" + httpAddr}
	cases := []struct {
		name string
		env  []string
		want []string
	}{
		{"typo", []string{"CHANGERATE_KAFKA_BROKER=127.0.0.1:37165", "CHANGERATE_REDIS_ADDRS=127.0.0.1:16379"},
			[]string{"aggregator: config: unknown variable CHANGERATE_KAFKA_BROKER: did you mean CHANGERATE_KAFKA_BROKERS?"}},
		{"Redis only", []string{"CHANGERATE_REDIS_ADDRS=127.0.0.1:16379"},
			[]string{"(CHANGERATE_REDIS_ADDRS), but no mode: service mode needs CHANGERATE_KAFKA_BROKERS"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Env = append(append([]string(nil), base...), tc.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want status 2\nstderr:\n%s", err, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr.String())
				}
			}
			if strings.Contains(stderr.String(), "demo") && !strings.Contains(stderr.String(), "the demo runs only when asked for") || stdout.Len() > 0 {
				t.Errorf("the demo started:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
		})
	}
	// The README's demo command still runs the demo: no setting at all but
	// the demo's own.
	t.Run("no settings: the demo", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "--demo-exit", "--demo-pages=1", "--demo-days=4", "--log-level=warn")
		cmd.Env = base
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("demo: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "changerate demo:") {
			t.Errorf("the demo's output does not start with its heading:\n%s", out)
		}
	})
}

// buildAggregator builds this command into a temporary directory and
// returns the binary's path.
func buildAggregator(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "aggregator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
