package options

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/changerate/changerate/internal/cliconfig"
	"github.com/changerate/changerate/internal/extsort"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// all embeds every group, as a command's configuration does.
type all struct {
	Kafka
	KafkaTimeouts
	KafkaProducer
	Redis
	Log
	Topics
	ExternalSort
}

func defaults() all {
	return all{Kafka: DefaultKafka("changerate-test", stream.DefaultKafkaGroupID), KafkaTimeouts: DefaultKafkaTimeouts(), Redis: DefaultRedis(),
		Topics: DefaultTopics(), ExternalSort: DefaultExternalSort()}
}

func load(t *testing.T, env map[string]string, args ...string) (all, error) {
	t.Helper()
	a := defaults()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err := cliconfig.LoadFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Prefix, &a, fs, args)
	return a, err
}

// TestDefaultsAreTheLibrarys: where an option's default is the library's,
// the group documents and loads the library's value.
func TestDefaultsAreTheLibrarys(t *testing.T) {
	a, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc := a.Kafka.Config()
	a.KafkaTimeouts.ApplyTo(&kc)
	a.KafkaProducer.ApplyTo(&kc)
	for name, got := range map[string][2]any{
		"SessionTimeout":    {kc.SessionTimeout, stream.DefaultKafkaSessionTimeout},
		"HeartbeatInterval": {kc.HeartbeatInterval, stream.DefaultKafkaHeartbeatInterval},
		"RebalanceTimeout":  {kc.RebalanceTimeout, stream.DefaultKafkaRebalanceTimeout},
		"RequestTimeout":    {kc.RequestTimeout, stream.DefaultKafkaRequestTimeout},
		"FetchTimeoutSlack": {kc.FetchTimeoutSlack, stream.DefaultKafkaFetchTimeoutSlack},
		"GroupID":           {kc.GroupID, stream.DefaultKafkaGroupID},
		// Zero: computed by the library from the others.
		"JoinTimeout":       {kc.JoinTimeout, stream.KafkaConfig{}.JoinTimeout},
		"OrphanTimeout":     {kc.OrphanTimeout, stream.KafkaConfig{}.OrphanTimeout},
		"FetchStallTimeout": {kc.FetchStallTimeout, stream.KafkaConfig{}.FetchStallTimeout},
		"Compression":       {kc.Compression, stream.KafkaConfig{}.Compression},
	} {
		if got[0] != got[1] {
			t.Errorf("KafkaConfig.%s = %v, want the library's %v", name, got[0], got[1])
		}
	}
	if !strings.Contains(optionDesc(t, "KAFKA_FETCH_TIMEOUT_SLACK"), "("+stream.DefaultKafkaFetchMaxWait.String()+")") {
		t.Errorf("KAFKA_FETCH_TIMEOUT_SLACK's description does not state the broker's max wait %v", stream.DefaultKafkaFetchMaxWait)
	}

	// state does not export its defaults; its ACL rules show the key
	// prefix and the expiry-event mode it uses, which must be the same
	// with the group's defaults as with the zero value.
	rc := a.Redis.Config(0)
	readable := func(c state.RedisConfig) state.RedisConfig { c.KeyFormat = state.KeyFormatReadable; return c }
	if got, want := state.RedisACLRules(readable(rc)), state.RedisACLRules(readable(state.RedisConfig{})); got != want {
		t.Errorf("Redis defaults differ from the library's:\n ACL %s\nwant %s", got, want)
	}
	if rc.KeyPrefix != DefaultRedisKeyPrefix || rc.ExpiryEvents != state.ExpiryEventsConfig || rc.Buckets != state.DefaultBuckets {
		t.Errorf("Redis KeyPrefix %q, ExpiryEvents %q, Buckets %d", rc.KeyPrefix, rc.ExpiryEvents, rc.Buckets)
	}
	if !strings.Contains(optionDesc(t, "REDIS_BUCKETS"), fmt.Sprintf("the default %d ", state.DefaultBuckets)) {
		t.Errorf("REDIS_BUCKETS's description does not state the library's default %d", state.DefaultBuckets)
	}
	if a.Topics != (Topics{stream.TopicObservations, stream.TopicDeadLetter}) || a.ExternalSort.Memory != extsort.DefaultMemory {
		t.Errorf("topics %+v, sort %+v", a.Topics, a.ExternalSort)
	}
	// The commands' own defaults.
	if rc.KeyFormat != state.KeyFormatBuckets || !a.Redis.RequireDurable || kc.Linger.String() != "5ms" || a.Log != (Log{"info", "text"}) {
		t.Errorf("command defaults: KeyFormat %q, RequireDurable %v, Linger %v, Log %+v", rc.KeyFormat, a.Redis.RequireDurable, kc.Linger, a.Log)
	}
	if err := kc.Validate(); !strings.Contains(err.Error(), "Brokers") {
		t.Errorf("defaults without brokers: Validate = %v, want only the brokers missing", err)
	}
	kc.Brokers = []string{"k:9092"}
	if err := kc.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := rc.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func optionDesc(t *testing.T, name string) string {
	t.Helper()
	a := defaults()
	for _, o := range cliconfig.Options(Prefix, &a) {
		if o.Env == Prefix+"_"+name {
			return o.Desc
		}
	}
	t.Fatalf("no option %s", name)
	return ""
}

// TestRedisBucketsBounds: REDIS_BUCKETS's bounds are the library's, and
// a value set reaches state.RedisConfig.Buckets.
func TestRedisBucketsBounds(t *testing.T) {
	a := defaults()
	for _, o := range cliconfig.Options(Prefix, &a) {
		if o.Env == Prefix+"_REDIS_BUCKETS" {
			if want := fmt.Sprintf(">=1 <=%d", state.MaxBuckets); o.Valid != want {
				t.Errorf("valid %q, want %q (state.MaxBuckets)", o.Valid, want)
			}
		}
	}
	got, err := load(t, map[string]string{"CHANGERATE_REDIS_BUCKETS": "128"})
	if err != nil {
		t.Fatal(err)
	}
	rc := got.Redis.Config(0)
	rc.Addrs = []string{"localhost:6379"}
	if rc.Buckets != 128 || rc.Validate() != nil {
		t.Errorf("REDIS_BUCKETS=128: RedisConfig.Buckets %d, Validate %v", rc.Buckets, rc.Validate())
	}
	// The library's check, named by the option (RedisError).
	rc.Buckets = state.MaxBuckets + 1
	if msg := RedisError(rc.Validate(), "IDLE_TTL"); !strings.HasPrefix(msg, Name("REDIS_BUCKETS")+":") {
		t.Errorf("RedisError = %q, want it to name REDIS_BUCKETS", msg)
	}
}

// TestDocumentedDefaultsLoad: the reference's defaults, given as values,
// load the same configuration as no values at all.
func TestDocumentedDefaultsLoad(t *testing.T) {
	want, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := defaults()
	env := map[string]string{}
	for _, o := range cliconfig.Options(Prefix, &a) {
		if o.Default != "" {
			env[o.Env] = o.Default
		}
	}
	got, err := load(t, env)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("loaded from the documented defaults %+v\nwant %+v", got, want)
	}
	var ref bytes.Buffer
	if err := cliconfig.WriteReference(&ref, Prefix, &a); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"| `CHANGERATE_KAFKA_SESSION_TIMEOUT` | `--kafka-session-timeout` | `30s` |", "| `CHANGERATE_REDIS_KEY_PREFIX` | `--redis-key-prefix` | `cr:` |",
		"| `CHANGERATE_KAFKA_GROUP` | `--kafka-group` | `changerate-aggregator` |", "| `CHANGERATE_KAFKA_JOIN_TIMEOUT` | `--kafka-join-timeout` | `—` |"} {
		if !strings.Contains(ref.String(), row) {
			t.Errorf("reference lacks %q:\n%s", row, ref.String())
		}
	}
}

func TestFlagsAndEnvironment(t *testing.T) {
	a, err := load(t, map[string]string{"CHANGERATE_KAFKA_BROKERS": "a:1,b:2", "CHANGERATE_REDIS_KEY_FORMAT": "readable", "CHANGERATE_LOG_LEVEL": "warn"},
		"--kafka-heartbeat=1s", "--redis-addrs=r:6379", "--log-level=debug", "--kafka-sasl-password=pw")
	if err != nil {
		t.Fatal(err)
	}
	kc := a.Kafka.Config()
	a.KafkaTimeouts.ApplyTo(&kc)
	rc := a.Redis.Config(0)
	if strings.Join(kc.Brokers, ",") != "a:1,b:2" || kc.HeartbeatInterval.String() != "1s" || kc.SASL.Password != "pw" ||
		rc.KeyFormat != "readable" || rc.Addrs[0] != "r:6379" || a.Log.Level != "debug" {
		t.Errorf("got %+v", a)
	}
}

func TestLog(t *testing.T) {
	err := Log{Level: "loud", Format: "xml"}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"CHANGERATE_LOG_LEVEL (--log-level)", `"loud"`, "CHANGERATE_LOG_FORMAT (--log-format)", `"xml"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	var b bytes.Buffer
	l, err := Log{Level: "warn", Format: "json"}.Logger(&b)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown")
	if s := b.String(); strings.Contains(s, "hidden") || !strings.Contains(s, `"msg":"shown"`) {
		t.Errorf("log %q", s)
	}
}

func TestKafkaError(t *testing.T) {
	for in, want := range map[string]string{
		`stream: KafkaConfig.Brokers: "x" is not host:port`:                            `CHANGERATE_KAFKA_BROKERS (--kafka-brokers): "x" is not host:port`,
		"stream: KafkaConfig.SASL.Username is required with PLAIN":                     "CHANGERATE_KAFKA_SASL_USERNAME (--kafka-sasl-username) is required with PLAIN",
		"stream: KafkaConfig.TLS.CertFile/KeyFile: no such file":                       "CHANGERATE_KAFKA_TLS_CERT (--kafka-tls-cert)/CHANGERATE_KAFKA_TLS_KEY (--kafka-tls-key): no such file",
		"stream: KafkaConfig.HeartbeatInterval (5s) must be below SessionTimeout (3s)": "CHANGERATE_KAFKA_HEARTBEAT (--kafka-heartbeat) (5s) must be below CHANGERATE_KAFKA_SESSION_TIMEOUT (--kafka-session-timeout) (3s)",
	} {
		if got := KafkaError(errors.New(in)); got != want {
			t.Errorf("KafkaError(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

func TestTopicsAndSortValidate(t *testing.T) {
	err := errors.Join(Topics{}.Validate(), ExternalSort{Memory: -1}.Validate())
	for _, w := range []string{"CHANGERATE_OBSERVATIONS_TOPIC (--observations-topic)", "CHANGERATE_DEAD_LETTER_TOPIC (--dead-letter-topic)", "CHANGERATE_SORT_MEMORY (--sort-memory)"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
	if err := errors.Join(DefaultTopics().Validate(), DefaultExternalSort().Validate()); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestExternalSort: the memory budget reads sizes as the other byte
// options do; a negative budget's message gives the real default; the
// spill directory must exist (checked at start, not at the first spill).
func TestExternalSort(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		mem  int64
		want string // "": valid
	}{
		{"flag size", nil, []string{"--sort-memory=1MiB"}, 1 << 20, ""},
		{"env size", map[string]string{"CHANGERATE_SORT_MEMORY": "64KiB"}, nil, 64 << 10, ""},
		{"plain number", nil, []string{"--sort-memory=100000"}, 100000, ""},
		{"zero", nil, []string{"--sort-memory=0"}, 0, ""},
		{"existing dir", nil, []string{"--sort-dir=" + t.TempDir()}, extsort.DefaultMemory, ""},
		{"negative", nil, []string{"--sort-memory=-1"}, 0, "CHANGERATE_SORT_MEMORY (--sort-memory)"},
		{"missing dir", nil, []string{"--sort-dir=/nonexistent"}, 0, "CHANGERATE_SORT_DIR (--sort-dir): stat /nonexistent"},
		{"file as dir", nil, []string{"--sort-dir=" + file}, 0, "CHANGERATE_SORT_DIR (--sort-dir): " + file + " is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := load(t, tc.env, tc.args...)
			if err == nil {
				err = a.ExternalSort.Validate()
			}
			if tc.want == "" {
				if err != nil || int64(a.ExternalSort.Memory) != tc.mem {
					t.Fatalf("memory %d, err %v; want %d", a.ExternalSort.Memory, err, tc.mem)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	err := ExternalSort{Memory: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "0: the default, 256MiB") {
		t.Errorf("negative budget: %v, want the default 256MiB named", err)
	}
}

func TestRedisError(t *testing.T) {
	err := (Redis{Addrs: []string{"x"}, DB: -1, KeyPrefix: "{"}).Config(0).Validate()
	got := RedisError(err, "IDLE_TTL")
	for _, w := range []string{"invalid Redis configuration:", "CHANGERATE_REDIS_ADDRS (--redis-addrs):", "CHANGERATE_REDIS_DB (--redis-db):", "CHANGERATE_REDIS_KEY_PREFIX (--redis-key-prefix):"} {
		if !strings.Contains(got, w) {
			t.Errorf("RedisError = %q, lacks %q", got, w)
		}
	}
}
