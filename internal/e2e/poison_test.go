package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/records"
)

// poison is an undecodable message and what its dead letter's error must
// say.
type poison struct {
	name  string
	key   string
	value []byte
	want  string // substring of the dead letter's error
	// reason is the dead letter's reason; "" accepts any.
	reason string
}

func poisons(seed uint64) []poison {
	rng := rand.New(rand.NewPCG(seed, 6))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		b[0] = 0xff // never valid JSON
		return b
	}
	return []poison{
		{"invalid JSON", "poison-a", []byte(`{"object":"http://x.example/a","time":`), "unexpected EOF", "decode"},
		{"JSON, not an object", "poison-b", []byte(`[1,2,3]`), "not a JSON object", "decode"},
		{"JSON null", "poison-c", []byte(`null`), "object is empty", "decode"},
		{"empty object name", "poison-d", []byte(`{"object":"","time":"2026-10-02T00:00:00Z","kind":"visit"}`), "object is empty", "decode"},
		{"unknown kind", "poison-e", []byte(`{"object":"http://x.example/e","time":"2026-10-02T00:00:00Z","kind":"poke"}`), `kind "poke"`, "decode"},
		{"unknown field", "poison-f", []byte(`{"object":"http://x.example/f","time":"2026-10-02T00:00:00Z","kind":"access","colour":"red"}`), "unknown field", "decode"},
		{"missing time", "poison-g", []byte(`{"object":"http://x.example/g","kind":"access"}`), "time is missing", "decode"},
		{"trailing data", "poison-h", []byte(`{"object":"http://x.example/h","time":"2026-10-02T00:00:00Z","kind":"access"} {}`), "trailing data", "decode"},
		{"binary garbage", "poison-i", garbage(300), "invalid character", "decode"},
		{"empty message", "poison-j", nil, "EOF", "decode"},
		// 2 MiB: above the consumer's 1 MiB fetch size (the topic allows
		// 8 MiB messages) and far above the dead letter's 4 KiB input copy.
		{"oversized garbage", "poison-k", garbage(2 << 20), "invalid character", "decode"},
	}
}

// TestPoisonMessages produces undecodable messages of every kind among
// valid observations and checks that each reaches the dead-letter topic
// with its reason and position, that nothing else is lost (the object
// states equal, byte for byte, those of a run on the valid observations
// alone) and that the aggregator never stops.
func TestPoisonMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	t.Parallel() // its own broker, Redis and processes
	runPoison(t, poisons(seedFromEnv()), 8<<20)
}

// TestPoisonOversizedObservation produces a valid observation whose object
// name is 600 KiB, below the observations topic's default 1 MiB limit. The
// aggregator must dead-letter it (any reason) and go on.
//
// Applied, its estimate record (key and value both carry the name: 1.2 MB)
// would exceed what the estimates topic accepts and stall the partition;
// records.MaxObjectBytes (16 KiB) makes it a decode error instead.
func TestPoisonOversizedObservation(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	t.Parallel() // its own broker, Redis and processes
	big := []byte(`{"object":"http://x.example/` + strings.Repeat("a", 600<<10) + `","time":"2026-10-02T00:00:00Z","kind":"visit","digest":"d1"}`)
	runPoison(t, []poison{{"oversized observation", "poison-big", big, "", ""}}, 0)
}

// runPoison produces ps among 20,000 valid observations into a topic with
// maxMessageBytes (0: the broker's default), and checks the dead letters
// and the state against a run on the valid observations alone.
func runPoison(t *testing.T, ps []poison, maxMessageBytes int) {
	_, aggBin := buildBinaries(t)
	const parts = 4
	seed := seedFromEnv()
	w := genWorkload(seed+6, 20000)
	kc := kafkatest.StartWith(t, kafkatest.Options{})
	kc.CreateTopic(t, "obs-clean", parts)
	if maxMessageBytes > 0 {
		kc.CreateTopic(t, "obs-poison", parts, "max.message.bytes", fmt.Sprint(maxMessageBytes))
	} else {
		kc.CreateTopic(t, "obs-poison", parts)
	}
	at := map[int][]*kgo.Record{}
	for k, p := range ps {
		i := (k + 1) * len(w.Obs) / (len(ps) + 1)
		at[i] = append(at[i], &kgo.Record{Topic: "obs-poison", Key: []byte(p.key), Value: p.value})
	}
	var placed []*kgo.Record
	poisonPlace := produceTracked(t, kc, "obs-poison", w, func(i int) []*kgo.Record {
		placed = append(placed, at[i]...)
		return at[i]
	})
	cleanPlace := produceTracked(t, kc, "obs-clean", w, nil)
	hwPoison, hwClean := highWatermarks(t, kc, "obs-poison"), highWatermarks(t, kc, "obs-clean")
	var totalPoison int64
	for _, e := range hwPoison {
		totalPoison += e
	}
	if totalPoison != int64(len(w.Obs)+len(ps)) {
		t.Fatalf("obs-poison holds %d messages, want %d", totalPoison, len(w.Obs)+len(ps))
	}

	run := func(topic, suffix string, hw map[int32]int64) (dump, *aggProc) {
		rds := redistest.Start(t)
		checkLayout(t, rds.Client, topic)
		outputTopics(t, kc, suffix)
		a := startAgg(t, aggBin, topic, aggEnv(kc.Addr(), rds.Addr, "g"+suffix, suffix, "CHANGERATE_OBSERVATIONS_TOPIC="+topic))
		waitCaughtUp(t, rds.Client, topic, hw, 2*time.Minute, a)
		return dumpRedis(t, rds.Client), a
	}
	t0 := time.Now()
	dp, ap := run("obs-poison", "-poison", hwPoison)
	t.Logf("%d valid observations and %d poison messages processed in %v", len(w.Obs), len(ps), time.Since(t0).Round(time.Millisecond))
	dc, ac := run("obs-clean", "-pclean", hwClean)

	// The aggregator kept running and counted every message.
	m := ap.metrics("changerate_aggregator_")
	if ap.exited() {
		t.Fatalf("aggregator exited: %v", ap.waitErr)
	}
	if got := metricSum(m, "changerate_aggregator_messages_committed_total"); int64(got) != totalPoison {
		t.Errorf("committed %v messages, want %d", got, totalPoison)
	}
	if got := metricSum(m, "changerate_aggregator_dead_letters_total"); int(got) != len(ps) {
		t.Errorf("dead_letters_total = %v, want %d", got, len(ps))
	}
	ap.terminate(30 * time.Second)
	ac.terminate(30 * time.Second)

	// Every valid observation was applied: the object states equal those
	// of the run without poison (and the oracle's).
	compareDumps(t, "clean topic vs oracle", oracle(w, "obs-clean", cleanPlace, hwClean), dc)
	compareDumps(t, "poison topic vs oracle of its valid observations", oracle(w, "obs-poison", poisonPlace, hwPoison), dp)

	// Each poison message is in the dead-letter topic once, with its
	// position and reason.
	pos := map[string]poison{}
	for k, r := range placed {
		pos[fmt.Sprintf("obs-poison/%d@%d", r.Partition, r.Offset)] = ps[k]
	}
	dls := kc.ReadAll(t, "dead-letter-poison")
	if len(dls) != len(ps) {
		t.Errorf("%d dead letters, want %d", len(dls), len(ps))
	}
	seen := map[string]bool{}
	for _, r := range dls {
		var dl records.DeadLetter
		if err := json.Unmarshal(r.Value, &dl); err != nil {
			t.Errorf("dead letter is not JSON: %v: %.200q", err, r.Value)
			continue
		}
		p, ok := pos[dl.Position]
		if !ok || seen[dl.Position] {
			t.Errorf("dead letter at unexpected or repeated position %q", dl.Position)
			continue
		}
		seen[dl.Position] = true
		wantIn := p.value
		if len(wantIn) > records.MaxDeadLetterInput {
			wantIn = wantIn[:records.MaxDeadLetterInput]
		}
		switch {
		case dl.Stage != "aggregator" || dl.Format != "obs-poison" || dl.Reason == "" || (p.reason != "" && dl.Reason != p.reason):
			t.Errorf("%s: dead letter stage %q format %q reason %q", p.name, dl.Stage, dl.Format, dl.Reason)
		case !strings.Contains(dl.Error, p.want):
			t.Errorf("%s: dead letter error %q lacks %q", p.name, dl.Error, p.want)
		case dl.Input != string(bytes.ToValidUTF8(wantIn, []byte("\uFFFD"))):
			t.Errorf("%s: dead letter input %.80q, want the first %d bytes of the message", p.name, dl.Input, len(wantIn))
		case dl.Time.IsZero():
			t.Errorf("%s: dead letter without time", p.name)
		}
		if len(r.Value) > 64<<10 {
			t.Errorf("%s: dead letter of %d bytes", p.name, len(r.Value))
		}
		t.Logf("%-20s → %s %s: %.90s", p.name, dl.Position, dl.Reason, dl.Error)
	}
}
