// Package e2e holds the end-to-end tests of the whole pipeline: the real
// ingest and aggregator binaries as child processes, a real redis-server, an
// in-process Kafka-protocol broker (kfake) and the real kcat client reading
// the output topics.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/changerate/changerate/aggregate"
	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/internal/recordschema"
	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/internal/sample"
	"github.com/changerate/changerate/records"
)

// buildBinaries compiles cmd/ingest and cmd/aggregator into a temporary
// directory.
func buildBinaries(t *testing.T) (ingest, aggregator string) {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ingest", "aggregator"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./cmd/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
	}
	return filepath.Join(dir, "ingest"), filepath.Join(dir, "aggregator")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// testSample is a smaller version of the demo's sample: 8 crawled and 8
// proxied pages over 20 days.
func testSample() sample.Config {
	c := sample.Default()
	c.Seed, c.PerClass, c.Duration = 42, 2, 20*24*time.Hour
	return c
}

func writeLogs(t *testing.T, c sample.Config) (crawl, squid string) {
	t.Helper()
	dir := t.TempDir()
	crawl, squid = filepath.Join(dir, "crawl.log"), filepath.Join(dir, "access.log")
	for path, gen := range map[string]func(io.Writer) error{crawl: c.WriteCrawlLog, squid: c.WriteSquidLog} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := gen(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// One bad line in the middle of the squid log: it must reach the
	// dead-letter topic and nothing else may be lost.
	b, err := os.ReadFile(squid)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	mid := len(lines) / 2
	bad := append(append(append([]string{}, lines[:mid]...), "this is not a squid line\n"), lines[mid:]...)
	if err := os.WriteFile(squid, []byte(strings.Join(bad, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return crawl, squid
}

func metricValue(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, name)), 64)
			if err == nil {
				return v
			}
		}
	}
	return 0
}

// metricSumLabels sums the series of a labelled metric.
func metricSumLabels(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var sum float64
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+"{") {
			if i := strings.LastIndexByte(line, ' '); i > 0 {
				v, err := strconv.ParseFloat(line[i+1:], 64)
				if err == nil {
					sum += v
				}
			}
		}
	}
	return sum
}

// latestByKey parses kcat's "%k\t%s\n" output into the last value per key.
func latestByKey(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("kcat line without a tab: %q", line)
		}
		m[k] = v
	}
	return m
}

// TestPipelineEndToEnd pushes generated logs with known change rates
// through ingest → Kafka → aggregator (Redis state) → estimates topic, reads
// the estimates back with kcat, checks them against the truth, and checks
// that the Unix-filter path gives byte-identical estimates to the query
// API's from the committed state.
func TestPipelineEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	t.Parallel() // its own broker, Redis and processes
	ingestBin, aggBin := buildBinaries(t)
	kafkatest.KcatPath(t) // skip or fail early when kcat is missing
	rds := redistest.Start(t)
	kc := kafkatest.Start(t,
		kafkatest.Topic{Name: "observations", Partitions: 4},
		kafkatest.Topic{Name: "estimates", Partitions: 4},
		kafkatest.Topic{Name: "access-reports", Partitions: 4},
		kafkatest.Topic{Name: "alerts", Partitions: 4},
		kafkatest.Topic{Name: "dead-letter", Partitions: 1},
		kafkatest.Topic{Name: "late", Partitions: 1},
	)
	sc := testSample()
	crawl, squid := writeLogs(t, sc)

	// 1. ingest both logs into Kafka.
	for _, in := range []struct{ format, path string }{{"heritrix", crawl}, {"squid", squid}} {
		cmd := exec.Command(ingestBin, "--format="+in.format, "--out=kafka", "--kafka-brokers="+kc.Addr(), in.path)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ingest %s: %v\n%s", in.format, err, out)
		}
	}
	var total int64
	for _, b := range kc.Offsets(t, "observations") {
		total += b.End
	}
	if total == 0 {
		t.Fatal("ingest wrote nothing")
	}

	// 2. run the aggregator as a service until it has committed everything.
	httpAddr := freeAddr(t)
	agg := exec.Command(aggBin)
	agg.Env = append(os.Environ(),
		"CHANGERATE_KAFKA_BROKERS="+kc.Addr(), "CHANGERATE_REDIS_ADDRS="+rds.Addr, "CHANGERATE_REDIS_REQUIRE_DURABLE=false",
		"CHANGERATE_HTTP_ADDR="+httpAddr, "CHANGERATE_CREATE_TOPICS=false", "CHANGERATE_EMIT_INTERVAL=0s", "CHANGERATE_REDIS_KEY_FORMAT=readable",
		"CHANGERATE_KAFKA_SESSION_TIMEOUT=10s", "CHANGERATE_KAFKA_HEARTBEAT=1s",
		"CHANGERATE_IDLE_RELEASE=500ms", // the reorder buffers release the end of the stream soon
		// Seasonal access profiles are learned per site and partition, so
		// the access windows depend on the partitioning (docs/alerts.md);
		// the byte-for-byte comparison with the one-partition filter path
		// (step 7) runs without them. TestFaults covers them with Kafka and
		// Redis against an in-process oracle.
		"CHANGERATE_SEASONAL_LEARNING=0")
	var aggLog bytes.Buffer
	agg.Stdout, agg.Stderr = &aggLog, &aggLog
	if err := agg.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- agg.Wait() }()
	t.Cleanup(func() {
		if agg.ProcessState == nil {
			_ = agg.Process.Kill()
			<-exited
		}
	})
	metrics := "http://" + httpAddr + "/metrics"
	deadline := time.Now().Add(2 * time.Minute)
	for {
		// Every message committed, and every observation applied (the
		// last ones leave the reorder buffers after IDLE_RELEASE).
		got := metricValue(t, metrics, "changerate_aggregator_messages_committed_total")
		if int64(got) == total && int64(metricSumLabels(t, metrics, "changerate_aggregator_observations_outcome_total")) == total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("aggregator committed %v of %d messages in time\n%s", got, total, aggLog.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("aggregator exited early: %v\n%s", err, aggLog.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if resp, err := http.Get("http://" + httpAddr + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz: %v %v", resp, err)
	}
	// The query API's estimates, built from the committed state (step 7
	// compares them with the filter path's final estimates).
	queried := map[string]string{}
	for _, p := range append(sc.Pages(), sc.ProxyPages()...) {
		for _, kind := range []string{records.EstimateChange, records.EstimateAccess} {
			resp, err := http.Get("http://" + httpAddr + "/v1/objects?" + url.Values{"url": {p.URL}, "kind": {kind}}.Encode())
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case err != nil:
				t.Fatal(err)
			case resp.StatusCode == http.StatusNotFound:
				continue
			case resp.StatusCode != http.StatusOK:
				t.Fatalf("/v1/objects %s %s: %s %s", p.URL, kind, resp.Status, body)
			}
			key := p.URL
			if kind == records.EstimateAccess {
				key += "#access"
			}
			queried[key] = string(bytes.TrimSpace(body))
		}
	}

	// 3. SIGTERM drains and exits cleanly.
	if err := agg.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("aggregator exit after SIGTERM: %v\n%s", err, aggLog.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("aggregator did not exit within 30s of SIGTERM\n%s", aggLog.String())
	}

	// 4. Redis holds the states and every partition's next offset.
	ctx := context.Background()
	keys, err := rds.Client.Keys(ctx, "{cr:observations:*}:o:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	objKeys := keys[:0]
	for _, k := range keys {
		if !strings.Contains(k, aggregate.ReorderObject) { // each partition's reorder-buffer position
			objKeys = append(objKeys, k)
		}
	}
	keys = objKeys
	// besides the objects: one alert book per partition that committed a
	// batch (key "#alerts") and one state per site and partition that
	// holds the site's change-rate prior (key "#site HOST"; without
	// seasonal profiles, see step 2: aggregate.PriorOnly)
	books, sites := 0, 0
	for _, k := range keys {
		switch {
		case strings.HasSuffix(k, ":o:"+aggregate.AlertsKey):
			books++
		case strings.Contains(k, ":o:"+aggregate.SiteKeyPrefix):
			sites++
		}
	}
	hosts := map[string]bool{}
	for _, pg := range append(sc.Pages(), sc.ProxyPages()...) {
		hosts[aggregate.Site(pg.URL)] = true
	}
	if want := len(sc.Pages()) + len(sc.ProxyPages()); len(keys)-books-sites != want || books < 1 || books > 4 ||
		sites < len(hosts) || sites > len(hosts)*books {
		t.Errorf("%d object states, %d alert books and %d site states in Redis, want %d, 1–4 and %d–%d (each of %d sites in 1 to %d partitions)",
			len(keys)-books-sites, books, sites, want, len(hosts), len(hosts)*books, len(hosts), books)
	}

	// 5. kcat (a non-Go client) reads the estimates.
	out := kafkatest.RunKcat(t, "-b", kc.Addr(), "-C", "-t", "estimates", "-e", "-o", "beginning", "-q", "-f", "%k\t%s\n")

	latest := latestByKey(t, out)
	truth := map[string]sample.Page{}
	for _, p := range append(sc.Pages(), sc.ProxyPages()...) {
		truth[p.URL] = p
	}
	var errs []float64
	covered, n := 0, 0
	for url, p := range truth {
		v, ok := latest[url]
		if !ok {
			t.Errorf("no change estimate for %s", url)
			continue
		}
		var e records.Estimate
		if err := json.Unmarshal([]byte(v), &e); err != nil {
			t.Fatal(err)
		}
		if e.RatePerS == nil || e.CI95 == nil || e.Kind != records.EstimateChange {
			t.Errorf("%s: incomplete estimate %s", url, v)
			continue
		}
		n++
		if e.CI95[0] <= p.ChangeRate && p.ChangeRate <= e.CI95[1] {
			covered++
		}
		errs = append(errs, math.Abs(math.Log(*e.RatePerS/p.ChangeRate)))
		if p.AccessRate > 0 {
			av, ok := latest[url+"#access"]
			if !ok {
				t.Errorf("no access estimate for %s", url)
				continue
			}
			var a records.Estimate
			if err := json.Unmarshal([]byte(av), &a); err != nil {
				t.Fatal(err)
			}
			// ~2,000–6,000 accesses: the Poisson relative SE is ≤ 2.3%;
			// 10% is more than 4 standard errors.
			if a.RatePerS == nil || math.Abs(*a.RatePerS/p.AccessRate-1) > 0.10 {
				t.Errorf("%s: access rate %v, true %g", url, a.RatePerS, p.AccessRate)
			}
		}
	}
	sort.Float64s(errs)
	t.Logf("%d change estimates: %d intervals cover the truth; median |log(est/true)| = %.3f", n, covered, errs[len(errs)/2])
	// 16 objects, nominal 95% coverage: P(fewer than 12 covered) < 0.1%.
	if covered < 12 {
		t.Errorf("only %d of %d 95%% intervals cover the true rate", covered, n)
	}
	if errs[len(errs)/2] > 0.3 {
		t.Errorf("median |log(estimate/true)| = %.3f, want < 0.3", errs[len(errs)/2])
	}

	// Every record on every output topic, as a non-Go client reads it, is
	// what its JSON Schema (api/records) says.
	for _, topic := range []string{"observations", "estimates", "access-reports", "alerts", "dead-letter", "late"} {
		kind, _ := recordschema.ForTopic(topic)
		recs := kafkatest.RunKcat(t, "-b", kc.Addr(), "-C", "-t", topic, "-e", "-o", "beginning", "-q", "-f", "%s\n")
		n := 0
		for _, line := range strings.Split(recs, "\n") {
			if line != "" {
				recordschema.Check(t, kind, []byte(line))
				n++
			}
		}
		t.Logf("%s: %d records valid against the %s schema", topic, n, kind)
	}

	// 6. The bad line reached the dead-letter topic with its reason.
	dl := kafkatest.RunKcat(t, "-b", kc.Addr(), "-C", "-t", "dead-letter", "-e", "-o", "beginning", "-q", "-f", "%s\n")
	if !strings.Contains(dl, "this is not a squid line") {
		t.Errorf("dead-letter topic lacks the bad line:\n%s", dl)
	}

	// 7. The Unix-filter path gives the same final estimates, byte for byte,
	// as the query API from the committed state. (Not as the latest
	// records on the topic: a record is the state at the end of the batch
	// that published it, and a batch publishes the change estimate only if
	// it applied visits: when an object's last access is released in a
	// later batch than its last visit — the reorder buffers release the
	// last REORDER_WINDOW after IDLE_RELEASE — its latest change record is
	// as of that visit, while the final state's is as of the access.)
	var obs bytes.Buffer
	for _, in := range []struct{ format, path string }{{"heritrix", crawl}, {"squid", squid}} {
		cmd := exec.Command(ingestBin, "--format="+in.format, "--out=-", "--dead-letter=/dev/null", in.path)
		cmd.Stdout = &obs
		if err := cmd.Run(); err != nil {
			t.Fatalf("ingest --out=-: %v", err)
		}
	}
	filter := exec.Command(aggBin, "--in=-", "--store=memory", "--out=-", "--emit=final", "--seasonal-learning=0")
	filter.Stdin = &obs
	fout, err := filter.Output()
	if err != nil {
		t.Fatalf("aggregator filter: %v", err)
	}
	filtered := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(fout)), "\n") {
		var e records.Estimate
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("filter output %q: %v", line, err)
		}
		key := e.Object
		if e.Kind == records.EstimateAccess {
			key += "#access"
		}
		filtered[key] = line
	}
	if len(filtered) != len(latest) || len(filtered) != len(queried) {
		t.Errorf("filter path gave %d estimates, Kafka path %d keys, query API %d", len(filtered), len(latest), len(queried))
	}
	for k, v := range queried {
		if filtered[k] != v {
			t.Errorf("%s differs:\nquery API: %s\nfilter:    %s", k, v, filtered[k])
		}
	}

}
