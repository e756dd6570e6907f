package aggregate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// TestProcessorScenarios runs the scripts in testdata/scenarios: each file
// drives one Processor over a stream.MemorySource (stepped: it fetches
// only what the script allows), a state.Memory behind a scriptable store
// double and a stream.MemorySink behind a scriptable sink double, and
// prints what is observable: the stored offset and epoch, each claim's
// position, MarkCommitted value and handler result, Run's result and the
// outputs per topic. Rewrite the expected outputs with
// `go test ./aggregate -run TestProcessorScenarios -rewrite`.
//
// Commands (p: partition, default 0; gen: which claim, default the newest
// of p):
//
//	processor [batch=N] [idle-check=D] [idle-release=D] [drain-timeout=D]
//	          [takeover-delay=D] [reorder=D] [emit=final]
//	                     create the Processor and start Run (durations: Go
//	                     syntax; reorder: the reorder
//	                     window, the buffer is off without it)
//	append [p=N]         append the input lines, one message each:
//	                     "object minute digest" (a visit at t0+minute) or
//	                     "raw text" (an undecodable message)
//	claim [p=N] gen=G [wait|wait-store]   assign p at generation G; with
//	                     wait, wait until the handler waits for input (or
//	                     returned); with wait-store, until it called
//	                     Store.Claim
//	rebalance [p=N]      revoke p and assign it at the next generation
//	revoke [p=N] [gen=G] revoke every claim of p, or only generation G
//	fetch N [p] [gen] [nowait|wait-get]   let the claim fetch N more
//	                     messages and (unless nowait) wait until its
//	                     handler waits for input again (or returned); with
//	                     wait-get, only until the handler called Store.Get
//	                     (a batch's read)
//	fail-fetch [p] [gen] the claim's next Fetch fails (not a context error)
//	seal [p=N]           end p's input: Fetch returns io.EOF at its end
//	store-claim [p=N] gen=G   claim p in the store at epoch G (another owner)
//	fail-commit [n=N] err=transient|mismatch   the next N commits fail
//	fail-get [n=N] [err=transient|collision]   the next N store reads
//	                     (Get) fail (default 1): transient (Redis
//	                     unreachable, the default) or with
//	                     state.ErrKeyCollision (permanent); n=0 ends the
//	                     failures
//	lose-state           the store loses every partition's state (a Redis
//	                     restarted without persistence)
//	fail-claim [n=N] err=transient|collision   the next N store claims
//	                     (Claim) fail: transient (Redis unreachable) or
//	                     with state.ErrKeyCollision (permanent)
//	hold-commit / release-commit   block commits until released (or their
//	                     context ends)
//	hold-write / release-write   block sink writes until released (or
//	                     their context ends)
//	fail-write [n=N] err=transient|closed      the next N sink writes fail
//	reject topic=T|(T,...)   the sink rejects every message to these topics
//	checkpoint [p=N]     remember p's stored state
//	lose-writes [p=N]    put p's stored state back to the checkpoint (a
//	                     store that lost its latest writes)
//	idle                 wait until the handler's idle check reads the store
//	cancel               cancel Run's context (SIGTERM)
//	estimates            print the estimates written, in order: object,
//	                     kind, observations, changes
//	expect [p] [gen] key=value...   wait (at most 10s) until the state shows
//	                     every key=value (keys: stored, epoch, position,
//	                     committed, waiting (in Fetch), handler, run, or an
//	                     output topic), then print it
//	state                print the state now
func TestProcessorScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		env := &scenario{t: t}
		defer env.stop()
		datadriven.RunTest(t, path, env.do)
	})
}

const scenarioTopic = stream.TopicObservations

// scenario is one script's environment.
type scenario struct {
	t      *testing.T
	src    *stream.MemorySource
	store  *scriptStore
	sink   *scriptSink
	p      *Processor
	cancel context.CancelFunc
	runErr chan error
	ran    bool // Run returned; err is its result
	err    error
	claims []*stream.MemoryClaim
}

func (s *scenario) stop() {
	if s.cancel != nil {
		s.cancel()
		s.runResult(10 * time.Second)
	}
}

// runResult waits at most d for Run's result.
func (s *scenario) runResult(d time.Duration) {
	if s.ran || s.runErr == nil {
		return
	}
	select {
	case s.err = <-s.runErr:
		s.ran = true
	case <-time.After(d):
	}
}

func (s *scenario) do(t *testing.T, d *datadriven.TestData) string {
	p := int32(0)
	if d.HasArg("p") {
		var v int
		d.ScanArgs(t, "p", &v)
		p = int32(v)
	}
	switch d.Cmd {
	case "processor":
		return s.start(t, d)
	case "append":
		var msgs []stream.Message
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			msgs = append(msgs, stream.Message{Value: observationLine(t, line)})
		}
		first := s.src.Append(scenarioTopic, p, msgs...)
		return fmt.Sprintf("offsets %d-%d", first, first+int64(len(msgs))-1)
	case "claim":
		var gen int64
		d.ScanArgs(t, "gen", &gen)
		before := s.store.claims()
		c := s.src.Assign(scenarioTopic, p, gen)
		s.claims = append(s.claims, c)
		if d.HasArg("wait") {
			s.waitIdle(t, c)
		}
		if d.HasArg("wait-store") {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.store.waitClaims(ctx, before+1); err != nil {
				t.Fatalf("%s: the handler never claimed the store: %v", d.Pos, err)
			}
		}
		return "ok"
	case "rebalance":
		c := s.src.Rebalance(scenarioTopic, p)
		s.claims = append(s.claims, c)
		s.waitIdle(t, c)
		return fmt.Sprintf("generation %d", c.Generation())
	case "revoke":
		if d.HasArg("gen") {
			s.claim(t, d, p).Revoke()
		} else {
			s.src.Revoke(scenarioTopic, p)
		}
		return "ok"
	case "fetch":
		n, err := strconv.Atoi(d.CmdArgs[0].Key)
		if err != nil {
			t.Fatalf("%s: fetch N: %v", d.Pos, err)
		}
		c := s.claim(t, d, p)
		from := c.Position()
		gets := s.store.gets()
		c.Allow(n)
		if d.HasArg("nowait") {
			return "ok"
		}
		if d.HasArg("wait-get") {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.store.waitGets(ctx, gets+1); err != nil {
				t.Fatalf("%s: the handler never read the store: %v", d.Pos, err)
			}
			return "ok"
		}
		s.waitIdle(t, c)
		to := c.Position()
		if to == from {
			return "fetched nothing"
		}
		return fmt.Sprintf("fetched %d-%d", from, to-1)
	case "fail-fetch":
		s.claim(t, d, p).FailFetch(errors.New("broker unreachable"))
		return "ok"
	case "seal":
		s.src.Seal(scenarioTopic, p)
		return "ok"
	case "store-claim":
		var gen int64
		d.ScanArgs(t, "gen", &gen)
		next, err := s.store.Memory().Claim(context.Background(), state.Partition{Topic: scenarioTopic, ID: p}, gen)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("next %d", next)
	case "fail-commit":
		n := 1
		d.MaybeScanArgs(t, "n", &n)
		var kind string
		d.ScanArgs(t, "err", &kind)
		err := errors.New("redis: i/o timeout")
		if kind == "mismatch" {
			err = fmt.Errorf("scripted: %w", state.ErrOffsetMismatch)
		}
		s.store.failCommits(n, err)
		return "ok"
	case "fail-get":
		n := 1
		d.MaybeScanArgs(t, "n", &n)
		kind := "transient"
		d.MaybeScanArgs(t, "err", &kind)
		err := errors.New("redis: connection reset")
		if kind == "collision" {
			err = fmt.Errorf("scripted: %w", state.ErrKeyCollision)
		}
		s.store.failGets(n, err)
		return "ok"
	case "lose-state":
		s.store.loseState(t)
		return "ok"
	case "estimates":
		var b strings.Builder
		for _, m := range s.sink.mem.Messages(stream.TopicEstimates) {
			var rec records.Estimate
			if err := json.Unmarshal(m.Value, &rec); err != nil {
				fmt.Fprintf(&b, "undecodable: %v\n", err)
				continue
			}
			fmt.Fprintf(&b, "%s %s observations=%d changes=%d\n", rec.Object, rec.Kind, rec.Observations, rec.Changes)
		}
		return strings.TrimSuffix(b.String(), "\n")
	case "fail-claim":
		n := 1
		d.MaybeScanArgs(t, "n", &n)
		var kind string
		d.ScanArgs(t, "err", &kind)
		err := errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
		if kind == "collision" {
			err = fmt.Errorf("scripted: %w", state.ErrKeyCollision)
		}
		s.store.failClaims(n, err)
		return "ok"
	case "hold-commit":
		s.store.hold(true)
		return "ok"
	case "release-commit":
		s.store.hold(false)
		return "ok"
	case "hold-write":
		s.sink.hold(true)
		return "ok"
	case "release-write":
		s.sink.hold(false)
		return "ok"
	case "fail-write":
		n := 1
		d.MaybeScanArgs(t, "n", &n)
		var kind string
		d.ScanArgs(t, "err", &kind)
		err := errors.New("kafka: broker not available")
		if kind == "closed" {
			err = stream.ErrClosed
		}
		s.sink.failWrites(n, err)
		return "ok"
	case "reject":
		arg, ok := d.Arg("topic")
		if !ok {
			t.Fatalf("%s: reject needs topic=", d.Pos)
		}
		topics := arg.Vals
		s.sink.mem.RejectIf(func(m stream.Message) string {
			if slices.Contains(topics, m.Topic) {
				return "MESSAGE_TOO_LARGE"
			}
			return ""
		})
		return "ok"
	case "checkpoint":
		s.store.checkpoint(t, state.Partition{Topic: scenarioTopic, ID: p})
		return "ok"
	case "lose-writes":
		s.store.loseWrites(t, state.Partition{Topic: scenarioTopic, ID: p})
		return "ok"
	case "idle":
		before := s.store.claims()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.store.waitClaims(ctx, before+1); err != nil {
			return "no idle check: " + err.Error()
		}
		return "idle check done"
	case "cancel":
		s.cancel()
		return "ok"
	case "expect":
		return s.expect(t, d, p)
	case "state":
		return s.state(p)
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

// start creates the Processor and runs the source.
func (s *scenario) start(t *testing.T, d *datadriven.TestData) string {
	cfg := DefaultConfig()
	cfg.BatchSize, cfg.RetryBackoff, cfg.DrainTimeout, cfg.DisableReorder = 100, time.Millisecond, time.Hour, true
	cfg.IdleCheck, cfg.IdleRelease, cfg.TakeoverDelay, cfg.Model.EmitInterval = 0, 0, 0, 0
	d.MaybeScanArgs(t, "batch", &cfg.BatchSize)
	dur := func(key string, dst *time.Duration) {
		var v string
		if d.MaybeScanArgs(t, key, &v) {
			x, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s: %s: %v", d.Pos, key, err)
			}
			*dst = x
		}
	}
	dur("idle-check", &cfg.IdleCheck)
	dur("idle-release", &cfg.IdleRelease)
	dur("drain-timeout", &cfg.DrainTimeout)
	dur("takeover-delay", &cfg.TakeoverDelay)
	if d.HasArg("emit") {
		d.ScanArgs(t, "emit", &cfg.Emit)
		cfg.CacheObjects, cfg.CacheBytes = 0, 0
	}
	if d.HasArg("reorder") {
		cfg.DisableReorder = false
		dur("reorder", &cfg.ReorderWindow)
	}
	mem, err := state.NewMemory(state.MemoryConfig{Now: func() time.Time { return t0 }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.store = newScriptStore(mem)
	s.sink = &scriptSink{mem: stream.NewMemorySink()}
	s.src = stream.NewMemorySource()
	s.src.SetStepped(true)
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("SCENARIO_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s.p, err = NewProcessor(cfg, s.store, s.sink, log, prometheus.NewRegistry(), func() time.Time { return t0 })
	if err != nil {
		return err.Error()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.runErr = make(chan error, 1)
	go func() { s.runErr <- s.src.Run(ctx, s.p.Handle) }()
	return "ok"
}

// observationLine encodes one input line of append.
func observationLine(t *testing.T, line string) []byte {
	if raw, ok := strings.CutPrefix(line, "raw "); ok {
		return []byte(raw)
	}
	f := strings.Fields(line)
	if len(f) != 3 {
		t.Fatalf("append: want \"object minute digest\", got %q", line)
	}
	min, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatalf("append: minute %q: %v", f[1], err)
	}
	b, err := json.Marshal(records.Observation{Object: f[0], Time: t0.Add(time.Duration(min) * time.Minute),
		Kind: records.KindVisit, Digest: f[2], Format: "jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// claim returns the claim a command names: generation gen of p, or the
// newest claim of p.
func (s *scenario) claim(t *testing.T, d *datadriven.TestData, p int32) *stream.MemoryClaim {
	gen := int64(-1)
	d.MaybeScanArgs(t, "gen", &gen)
	for i := len(s.claims) - 1; i >= 0; i-- {
		c := s.claims[i]
		if c.Partition() == p && (gen < 0 || c.Generation() == gen) {
			return c
		}
	}
	t.Fatalf("%s: no claim of partition %d generation %d", d.Pos, p, gen)
	return nil
}

func (s *scenario) waitIdle(t *testing.T, c *stream.MemoryClaim) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatalf("generation %d never waited for input: %v", c.Generation(), err)
	}
}

// values returns the observable state as key → value.
func (s *scenario) values(p int32, c *stream.MemoryClaim) map[string]string {
	v := map[string]string{}
	snap, err := s.store.Memory().Snapshot(context.Background(), state.Partition{Topic: scenarioTopic, ID: p})
	if err != nil {
		v["stored"] = err.Error()
	} else {
		v["stored"] = strconv.FormatInt(snap.Next, 10)
		v["epoch"] = strconv.FormatInt(snap.Epoch, 10)
	}
	if c != nil {
		v["position"] = strconv.FormatInt(c.Position(), 10)
		next, _ := c.Committed()
		v["committed"] = strconv.FormatInt(next, 10)
		v["waiting"] = strconv.FormatBool(c.Waiting())
		v["handler"] = "running"
		select {
		case <-c.Done():
			v["handler"] = fmt.Sprintf("returned(%v)", c.Err())
		default:
		}
	}
	s.runResult(0)
	v["run"] = "running"
	if s.ran {
		v["run"] = fmt.Sprintf("returned(%v)", s.err)
	}
	for _, topic := range []string{stream.TopicEstimates, stream.TopicDeadLetter, stream.TopicLate} {
		v[topic] = strconv.Itoa(len(s.sink.mem.Messages(topic)))
	}
	return v
}

func (s *scenario) state(p int32) string {
	var b strings.Builder
	var claims []*stream.MemoryClaim
	for _, c := range s.claims {
		if c.Partition() == p {
			claims = append(claims, c)
		}
	}
	v := s.values(p, nil)
	fmt.Fprintf(&b, "store: p%d stored=%s epoch=%s\n", p, v["stored"], v["epoch"])
	for _, c := range claims {
		cv := s.values(p, c)
		fmt.Fprintf(&b, "claim: gen=%d position=%s committed=%s handler=%s\n", c.Generation(), cv["position"], cv["committed"], cv["handler"])
	}
	fmt.Fprintf(&b, "outputs: %s=%s %s=%s %s=%s\n", stream.TopicEstimates, v[stream.TopicEstimates],
		stream.TopicDeadLetter, v[stream.TopicDeadLetter], stream.TopicLate, v[stream.TopicLate])
	for _, dl := range s.sink.mem.Messages(stream.TopicDeadLetter) {
		var rec records.DeadLetter
		if err := json.Unmarshal(dl.Value, &rec); err != nil {
			fmt.Fprintf(&b, "dead letter: undecodable: %v\n", err)
			continue
		}
		fmt.Fprintf(&b, "dead letter: %s at %s\n", rec.Reason, rec.Position)
	}
	fmt.Fprintf(&b, "run: %s", v["run"])
	return b.String()
}

// expect waits until every key=value argument holds in 5 successive
// looks 1ms apart (so that a passing state is not mistaken for the one
// expected), then prints the state. For handler and run, the value may
// omit the "(result)".
func (s *scenario) expect(t *testing.T, d *datadriven.TestData, p int32) string {
	var c *stream.MemoryClaim
	if len(s.claims) > 0 {
		c = s.claim(t, d, p)
	}
	deadline := time.Now().Add(10 * time.Second)
	stable := 0
	for {
		v := s.values(p, c)
		var unmet []string
		for _, a := range d.CmdArgs {
			if a.Key == "p" || a.Key == "gen" {
				continue
			}
			want := a.SingleVal(t)
			got, found := v[a.Key]
			if !found {
				t.Fatalf("%s: unknown key %q", d.Pos, a.Key)
			}
			if got != want && !((a.Key == "handler" || a.Key == "run") && strings.HasPrefix(got, want+"(")) {
				unmet = append(unmet, fmt.Sprintf("%s=%s (is %s)", a.Key, want, got))
			}
		}
		if len(unmet) == 0 {
			stable++
		} else {
			stable = 0
		}
		if stable == 5 {
			return s.state(p)
		}
		if time.Now().After(deadline) {
			return "timed out waiting for " + strings.Join(unmet, ", ") + "\n" + s.state(p)
		}
		time.Sleep(time.Millisecond)
	}
}

// scriptStore is a state.Store double: a state.Memory with scripted
// commit failures, held commits and lost writes.
type scriptStore struct {
	mu         sync.Mutex
	changed    chan struct{}
	mem        *state.Memory
	fails      int
	failErr    error
	getFails   int // how many of the next Gets fail with getErr
	getErr     error
	claimFails int // how many of the next Claims fail with claimErr
	claimErr   error
	gate       // closed: commits wait
	nClaims    int64
	nGets      int64
	saved      map[state.Partition]state.PartitionSnapshot
}

func newScriptStore(mem *state.Memory) *scriptStore {
	return &scriptStore{mem: mem, changed: make(chan struct{}), saved: map[state.Partition]state.PartitionSnapshot{}}
}

// Memory returns the store behind the double.
func (s *scriptStore) Memory() *state.Memory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mem
}

func (s *scriptStore) failCommits(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails, s.failErr = n, err
}

func (s *scriptStore) failGets(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.getFails, s.getErr = n, err
}

func (s *scriptStore) failClaims(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimFails, s.claimErr = n, err
}

func (s *scriptStore) hold(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate.set(on)
}

func (s *scriptStore) claims() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nClaims
}

func (s *scriptStore) gets() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nGets
}

// waitClaims waits until Claim was called n times.
func (s *scriptStore) waitClaims(ctx context.Context, n int64) error {
	return s.wait(ctx, func() bool { return s.nClaims >= n })
}

// waitGets waits until Get was called n times.
func (s *scriptStore) waitGets(ctx context.Context, n int64) error {
	return s.wait(ctx, func() bool { return s.nGets >= n })
}

// wait waits until done (called with s.mu held) holds.
func (s *scriptStore) wait(ctx context.Context, done func() bool) error {
	for {
		s.mu.Lock()
		done, ch := done(), s.changed
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *scriptStore) checkpoint(t *testing.T, p state.Partition) {
	snap, err := s.Memory().Snapshot(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saved[p] = snap
}

// loseState replaces the store by an empty one, as a Redis restarted
// without persistence.
func (s *scriptStore) loseState(t *testing.T) {
	mem, err := state.NewMemory(state.MemoryConfig{Now: func() time.Time { return t0 }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem = mem
}

// loseWrites replaces the store by one holding p's checkpoint (and, like
// a Redis restarted from an older AOF, the current epoch).
func (s *scriptStore) loseWrites(t *testing.T, p state.Partition) {
	ctx := context.Background()
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, ok := s.saved[p]
	if !ok {
		t.Fatal("lose-writes without a checkpoint")
	}
	cur, err := s.mem.Snapshot(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := state.NewMemory(state.MemoryConfig{Now: func() time.Time { return t0 }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Claim(ctx, p, cur.Epoch); err != nil {
		t.Fatal(err)
	}
	if snap.Next >= 0 {
		var writes []state.Write
		names := make([]string, 0, len(snap.Objects))
		for name := range snap.Objects {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			writes = append(writes, state.Write{Object: name, Value: snap.Objects[name]})
		}
		if err := mem.Commit(ctx, p, cur.Epoch, -1, snap.Next, writes); err != nil {
			t.Fatal(err)
		}
	}
	s.mem = mem
}

func (s *scriptStore) Claim(ctx context.Context, p state.Partition, epoch int64) (int64, error) {
	s.mu.Lock()
	var fail error
	if s.claimFails > 0 {
		s.claimFails--
		fail = s.claimErr
	}
	s.mu.Unlock()
	next, err := int64(0), fail
	if fail == nil {
		next, err = s.Memory().Claim(ctx, p, epoch)
	}
	s.mu.Lock()
	s.nClaims++
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	return next, err
}

func (s *scriptStore) Takeover(ctx context.Context, p state.Partition, epoch int64) (int64, error) {
	return s.Memory().Takeover(ctx, p, epoch)
}

func (s *scriptStore) Get(ctx context.Context, p state.Partition, objects []string, dst [][]byte) ([][]byte, error) {
	s.mu.Lock()
	var err error
	if s.getFails > 0 {
		s.getFails--
		err = s.getErr
	}
	s.nGets++
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if err != nil {
		return dst, err
	}
	return s.Memory().Get(ctx, p, objects, dst)
}

func (s *scriptStore) Commit(ctx context.Context, p state.Partition, epoch, from, to int64, writes []state.Write) error {
	s.mu.Lock()
	held := s.held
	var fail error
	if s.fails > 0 {
		s.fails--
		fail = s.failErr
	}
	s.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail != nil {
		return fail
	}
	return s.Memory().Commit(ctx, p, epoch, from, to, writes)
}

func (s *scriptStore) ExpiryGrace() time.Duration { return s.Memory().ExpiryGrace() }

func (s *scriptStore) Close() error { return nil }

// scriptSink is a stream.Sink double: a stream.MemorySink (which can
// reject messages) with scripted write failures and held writes.
type scriptSink struct {
	mem     *stream.MemorySink
	mu      sync.Mutex
	fails   int
	failErr error
	gate    // closed: writes wait
}

func (s *scriptSink) hold(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate.set(on)
}

// gate holds the calls of a test double while it is closed; its owner's
// mutex guards it.
type gate struct {
	held chan struct{} // non-nil: calls wait until it is closed
}

// set closes the gate (on) or opens it, releasing the calls waiting.
func (g *gate) set(on bool) {
	switch {
	case on && g.held == nil:
		g.held = make(chan struct{})
	case !on && g.held != nil:
		close(g.held)
		g.held = nil
	}
}

func (s *scriptSink) failWrites(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails, s.failErr = n, err
}

func (s *scriptSink) Write(ctx context.Context, msgs ...stream.Message) error {
	s.mu.Lock()
	if held := s.held; held != nil {
		s.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
	}
	if s.fails > 0 {
		s.fails--
		err := s.failErr
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	return s.mem.Write(ctx, msgs...)
}

func (s *scriptSink) Close() error { return s.mem.Close() }
