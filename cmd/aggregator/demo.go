package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/changerate/changerate/query"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/internal/sample"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/state"
	"github.com/changerate/changerate/stream"
)

// runDemo is the embedded default: an in-process Kafka-protocol broker
// (kfake), the in-memory store, and generated sample logs with known rates,
// through the real ingest → Kafka → aggregator → Kafka path.
func runDemo(ctx context.Context, cfg *config, stdout io.Writer, logger *slog.Logger, reg *prometheus.Registry) error {
	if cfg.DemoExit && !cfg.httpSet {
		// It exits after printing: nothing would be served, and a port
		// in use (:8080) must not fail it. HTTP_ADDR given still serves
		// while it runs.
		c := *cfg
		c.HTTP.Addr = ""
		cfg = &c
	}
	topics := []string{cfg.Topics.Observations, cfg.TopicEstimates, cfg.TopicAccessReports, cfg.TopicAlerts}
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(cfg.Partitions), topics...),
		kfake.SeedTopics(1, cfg.Topics.DeadLetter, cfg.TopicLate))
	if err != nil {
		return fmt.Errorf("demo: start in-process Kafka: %w", err)
	}
	defer broker.Close()
	kc := cfg.kafkaConfig()
	kc.Brokers = broker.ListenAddrs()
	// The broker is in this process: compressing what it stores saves no
	// network and costs CPU (with lz4, then the service's default, the demo
	// took 173 s to serve under the race detector against 18 s without
	// compression). The demo refuses KAFKA_COMPRESSION for that reason.
	kc.Compression = stream.DefaultKafkaCompression
	logger.Info("demo: in-process Kafka broker started", "brokers", strings.Join(kc.Brokers, ","))

	dir, err := os.MkdirTemp("", "changerate-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	sc := sample.Default()
	sc.PerClass, sc.Duration = cfg.DemoPages, time.Duration(cfg.DemoDays)*24*time.Hour
	// One proxied page's accesses rise tenfold two thirds into the
	// traffic, after the seasonal learning period (SEASONAL_LEARNING, 7
	// days) with the default 30 days: the alert the demo shows.
	sc.Surge = &sample.Surge{At: sc.Duration * 2 / 3, Factor: 10}
	crawlLog, squidLog := filepath.Join(dir, "crawl.log"), filepath.Join(dir, "access.log")
	if err := writeFile(crawlLog, sc.WriteCrawlLog); err != nil {
		return err
	}
	if err := writeFile(squidLog, sc.WriteSquidLog); err != nil {
		return err
	}

	store, err := state.NewMemory(state.MemoryConfig{IdleTTL: cfg.IdleTTL, Now: time.Now}, reg)
	if err != nil {
		return err
	}
	// The demo's input ends: release the reorder buffers soon after.
	demoCfg := *cfg
	demoCfg.IdleRelease = time.Second
	kp, err := newKafkaPipeline(&demoCfg, kc, store, logger, reg)
	if err != nil {
		return err
	}
	defer kp.close()
	return serve(ctx, cfg, kp, logger, reg, func(gctx context.Context, srv *httpServer, stop context.CancelFunc) error {
		start := time.Now()
		// Both logs merged by event time, as ingest does with several
		// files: the aggregator's watermark would find the second log late.
		sorted := ingest.NewSortingSink(kp.sink, cfg.Topics.Observations, 0, "", 0)
		defer sorted.Close()
		for _, in := range []struct{ format, path string }{{"heritrix", crawlLog}, {"squid", squidLog}} {
			icfg := ingest.Config{Format: in.format, Paths: []string{in.path}, ObservationsTopic: cfg.Topics.Observations,
				DeadLetterTopic: cfg.Topics.DeadLetter, ProgressInterval: -1}
			if _, err := ingest.Run(gctx, icfg, sorted, logger, nil); err != nil {
				return fmt.Errorf("demo: ingest %s: %w", in.format, err)
			}
		}
		if err := sorted.Flush(gctx); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		total, err := endOffsets(gctx, kc.Brokers[0], cfg.Topics.Observations)
		if err != nil {
			return err
		}
		logger.Info("demo: sample logs ingested", "observations", total, "took", time.Since(start).Round(time.Millisecond))
		// Every message committed and every observation applied (the end
		// of the stream leaves the reorder buffers after IDLE_RELEASE).
		for s := kp.proc.Stats(); kp.proc.Committed() < total || s.Applied+s.Duplicates+s.NoInformation+s.Late+s.Rejected < total; s = kp.proc.Stats() {
			select {
			case <-gctx.Done():
				return nil
			case <-time.After(100 * time.Millisecond):
			}
		}
		logger.Info("demo: aggregator caught up", "took", time.Since(start).Round(time.Millisecond))
		latest, err := readLatest(gctx, kc.Brokers[0], cfg.TopicEstimates)
		if err != nil {
			return err
		}
		alerts, err := readAll(gctx, kc.Brokers[0], cfg.TopicAlerts)
		if err != nil {
			return err
		}
		if err := printDemo(stdout, sc, latest, alerts); err != nil {
			return err
		}
		if srv != nil && !cfg.DemoExit {
			fmt.Fprintf(stdout, "\nServing http://%s/metrics, /healthz and /readyz, the web page http://%[1]s/ and the query API\n"+
				"(curl 'http://%[1]s/v1/top?by=change_rate&limit=5'); in-process Kafka at %s. Ctrl-C to stop.\n",
				srv.Addr(), strings.Join(kc.Brokers, ","))
			<-gctx.Done()
			return nil
		}
		stop()
		return nil
	})
}

func writeFile(path string, gen func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := gen(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// endOffsets returns the sum of the high watermarks of topic's partitions:
// the number of messages written to it (nothing is deleted in the demo).
func endOffsets(ctx context.Context, broker, topic string) (int64, error) {
	client := &kafka.Client{Addr: kafka.TCP(broker)}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("demo: metadata: %w", err)
	}
	var reqs []kafka.OffsetRequest
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			reqs = append(reqs, kafka.LastOffsetOf(p.ID))
		}
	}
	res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, fmt.Errorf("demo: list offsets: %w", err)
	}
	var total int64
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return 0, fmt.Errorf("demo: list offsets of %s/%d: %w", topic, po.Partition, po.Error)
		}
		total += po.LastOffset
	}
	return total, nil
}

// readLatest reads topic from the beginning to its end and returns the last
// value of every key: what the compacted estimates topic converges to.
func readLatest(ctx context.Context, broker, topic string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := readTopic(ctx, broker, topic, func(m kafka.Message) { out[string(m.Key)] = m.Value })
	return out, err
}

// readAll returns every value of topic, partition by partition in offset
// order.
func readAll(ctx context.Context, broker, topic string) ([][]byte, error) {
	var out [][]byte
	err := readTopic(ctx, broker, topic, func(m kafka.Message) { out = append(out, m.Value) })
	return out, err
}

// readTopic reads topic from the beginning to its end, calling f with
// each message.
func readTopic(ctx context.Context, broker, topic string, f func(kafka.Message)) error {
	client := &kafka.Client{Addr: kafka.TCP(broker)}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return fmt.Errorf("demo: metadata: %w", err)
	}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			res, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(p.ID)}}})
			if err != nil {
				return fmt.Errorf("demo: list offsets: %w", err)
			}
			end := res.Topics[topic][0].LastOffset
			if end == 0 {
				continue
			}
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{broker}, Topic: topic, Partition: p.ID, MaxWait: 200 * time.Millisecond})
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					r.Close()
					return fmt.Errorf("demo: read %s/%d: %w", topic, p.ID, err)
				}
				f(m)
				if m.Offset+1 >= end {
					break
				}
			}
			r.Close()
		}
	}
	return nil
}

// human formats seconds as a short duration.
func human(s float64) string { return query.FormatSeconds(s) }

// printDemo prints the change estimates next to the truth, then the access
// estimates, then the alerts (rawAlerts: the alerts topic's values).
func printDemo(w io.Writer, sc sample.Config, latest map[string][]byte, rawAlerts [][]byte) error {
	truth := map[string]sample.Page{}
	for _, p := range append(sc.Pages(), sc.ProxyPages()...) {
		truth[p.URL] = p
	}
	var change, access []records.Estimate
	for _, v := range latest {
		var e records.Estimate
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("demo: decode estimate: %w", err)
		}
		if e.Kind == records.EstimateAccess {
			access = append(access, e)
		} else {
			change = append(change, e)
		}
	}
	sort.Slice(change, func(i, j int) bool { return change[i].Object < change[j].Object })
	sort.Slice(access, func(i, j int) bool { return access[i].Object < access[j].Object })

	fmt.Fprintf(w, "\nchangerate demo: %d crawled pages (Heritrix crawl.log, hourly visits) and %d proxied pages (Squid access.log,\n"+
		"revalidations at irregular times), %s of simulated traffic; true change intervals are known.\n\n",
		len(sc.Pages()), len(sc.ProxyPages()), human(sc.Duration.Seconds()))
	if err := printEstimates(w, change, access, truth); err != nil {
		return err
	}
	return printAlerts(w, sc, rawAlerts)
}

// printAlerts prints the demo's rate-shift alerts, oldest first, and says
// which shift the sample holds: the surge page's (sample.Surge).
func printAlerts(w io.Writer, sc sample.Config, raw [][]byte) error {
	var alerts []records.Alert
	for _, v := range raw {
		var a records.Alert
		if err := json.Unmarshal(v, &a); err != nil {
			return fmt.Errorf("demo: decode alert: %w", err)
		}
		alerts = append(alerts, a)
	}
	sort.SliceStable(alerts, func(i, j int) bool { return alerts[i].AsOf.Before(alerts[j].AsOf) })
	fmt.Fprintf(w, "\nalerts (rate shifts confirmed by the detector, as on the alerts topic and at /v1/alerts): %d\n", len(alerts))
	if sc.Surge != nil {
		fmt.Fprintf(w, "(the sample's true shift: the accesses of http://%s%s rise %gx at %s)\n",
			sc.ProxyHost, sample.SurgePath, sc.Surge.Factor, sc.Start.Add(sc.Surge.At).Format(time.RFC3339))
	}
	if len(alerts) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "AS OF\tOBJECT\tKIND\tMEAN GAP BEFORE\tMEAN GAP AFTER\tCHANGE POINT\tSEVERITY\tP-VALUE\n")
	for _, a := range alerts {
		cp, sev := "-", a.Severity
		if a.WindowStart != nil {
			cp = a.WindowStart.UTC().Format(time.RFC3339)
		}
		if sev == "" {
			sev = "-"
		}
		gap := func(rate float64) string {
			if rate <= 0 {
				return "-"
			}
			return human(1 / rate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.3g\n", a.AsOf.UTC().Format(time.RFC3339), a.Object, a.Kind,
			gap(a.RateBefore), gap(a.RateAfter), cp, sev, a.PValue)
	}
	return tw.Flush()
}
