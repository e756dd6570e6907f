package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
	got, want := c.processorConfig(), aggregate.DefaultConfig()
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

// TestAPITokenFile: API_TOKEN, a secret, has its API_TOKEN_FILE as the
// other secrets do: the file's content without a trailing newline is the
// token; setting both, or a file that cannot be read, is a configuration
// error naming the variable (not a start without authentication).
func TestAPITokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain, newline, crlf := write("plain", "s3cret"), write("newline", "s3cret\n"), write("crlf", "s3cret\r\n")
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		name  string
		env   map[string]string
		args  []string
		token string
		err   []string
	}{
		{"variable", map[string]string{"CHANGERATE_API_TOKEN": "s3cret"}, nil, "s3cret", nil},
		{"file", map[string]string{"CHANGERATE_API_TOKEN_FILE": plain}, nil, "s3cret", nil},
		{"file with a trailing newline", map[string]string{"CHANGERATE_API_TOKEN_FILE": newline}, nil, "s3cret", nil},
		{"file with a trailing CRLF", nil, []string{"--api-token-file=" + crlf}, "s3cret", nil},
		{"both", map[string]string{"CHANGERATE_API_TOKEN": "x", "CHANGERATE_API_TOKEN_FILE": plain}, nil, "",
			[]string{"CHANGERATE_API_TOKEN (--api-token)", "CHANGERATE_API_TOKEN_FILE (--api-token-file)", "both set"}},
		{"unreadable file", map[string]string{"CHANGERATE_API_TOKEN_FILE": missing}, nil, "",
			[]string{"CHANGERATE_API_TOKEN_FILE (--api-token-file)", "no such file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := newConfig()
			fs := flag.NewFlagSet("aggregator", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
			_, err := cliconfig.LoadFrom(lookup, envPrefix, &cfg, fs, c.args)
			if c.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				if got := cfg.queryConfig().Token; got != c.token {
					t.Errorf("token %q, want %q", got, c.token)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; token %q", cfg.queryConfig().Token)
			}
			for _, w := range c.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestSecretsHaveFiles: every secret option (a password, a token) has its
// *_FILE twin, as docs/configuration.md says.
func TestSecretsHaveFiles(t *testing.T) {
	c := newConfig()
	opts := cliconfig.Options(envPrefix, &c)
	files := map[string]bool{}
	for _, o := range opts {
		if o.FileOf != "" {
			files[o.FileOf] = true
		}
	}
	for _, o := range opts {
		if o.FileOf == "" && (strings.HasSuffix(o.Env, "_PASSWORD") || strings.HasSuffix(o.Env, "_TOKEN") || strings.HasSuffix(o.Env, "_SECRET")) && !files[o.Env] {
			t.Errorf("%s is a secret without %s_FILE", o.Env, o.Env)
		}
	}
}

// TestUnknownVariableWarning: a CHANGERATE_ variable that neither command
// has is warned about at start (it used to be ignored without a word:
// CHANGERATE_API_TOKEN_FILE started the API without authentication); the
// other command's variables are not.
func TestUnknownVariableWarning(t *testing.T) {
	t.Setenv("CHANGERATE_NOT_AN_OPTION_OF_ANY_KIND", "1") // far from every option: a warning
	t.Setenv("CHANGERATE_FORMAT", "squid")                // ingest's
	var stderr bytes.Buffer
	in := `{"object":"http://a.example/","time":"2026-03-01T00:00:00Z","kind":"visit","digest":"sha1:1"}
{"object":"http://a.example/","time":"2026-03-02T00:00:00Z","kind":"visit","digest":"sha1:2"}
{"object":"http://a.example/","time":"2026-03-03T00:00:00Z","kind":"visit","digest":"sha1:2"}
{"object":"http://a.example/","time":"2026-03-04T00:00:00Z","kind":"visit","digest":"sha1:3"}
`
	if err := run(context.Background(), []string{"--in=-", "--out=-", "--store=memory", "--log-format=text"}, strings.NewReader(in), io.Discard, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if out := stderr.String(); !strings.Contains(out, "variable=CHANGERATE_NOT_AN_OPTION_OF_ANY_KIND") || strings.Contains(out, "CHANGERATE_FORMAT") {
		t.Errorf("stderr does not warn about CHANGERATE_NOT_AN_OPTION_OF_ANY_KIND only:\n%s", out)
	}
	// A misspelt option (one edit from API_TOKEN) is an error, in filter
	// mode too: the token would be ignored and the API left open.
	t.Setenv("CHANGERATE_API_TOKN", "s3cret")
	err := run(context.Background(), []string{"--in=-", "--out=-", "--store=memory"}, strings.NewReader(in), io.Discard, io.Discard)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "CHANGERATE_API_TOKN: did you mean CHANGERATE_API_TOKEN?") {
		t.Errorf("run with CHANGERATE_API_TOKN: %v; want a usage error naming CHANGERATE_API_TOKEN", err)
	}
}

// TestKafkaCompressionOption: KAFKA_COMPRESSION reaches the sink's
// configuration; unset, the aggregator's default, snappy.
func TestKafkaCompressionOption(t *testing.T) {
	for _, c := range []struct{ env, want string }{{"", "snappy"}, {"none", "none"}, {"lz4", "lz4"}, {"zstd", "zstd"}} {
		cfg := newConfig()
		fs := flag.NewFlagSet("aggregator", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		lookup := func(k string) (string, bool) {
			if k == envPrefix+"_KAFKA_COMPRESSION" && c.env != "" {
				return c.env, true
			}
			return "", false
		}
		if _, err := cliconfig.LoadFrom(lookup, envPrefix, &cfg, fs, nil); err != nil {
			t.Fatal(err)
		}
		if got := cfg.kafkaConfig().Compression; got != c.want {
			t.Errorf("KAFKA_COMPRESSION=%q: KafkaConfig.Compression %q, want %q", c.env, got, c.want)
		}
	}
}
