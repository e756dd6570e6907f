package stream_test

// The bounds of the consumer group (kafka_group.go): a broker that never answers cannot hang the
// source (the watchdog rejoins with a fresh member ID, again and again,
// and Run still stops promptly), and a connection that goes silent under
// an owned partition costs one fetch deadline, then the partition fetches
// again by itself.

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// silentBroker accepts connections and reads whatever is sent, never
// answering: a broker whose process hangs, or a half-open connection.
func silentBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	return ln.Addr().String()
}

func TestKafkaSourceSurvivesSilentBroker(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := stream.KafkaConfig{
		Brokers: []string{silentBroker(t)}, GroupID: "silent",
		DialTimeout: 300 * time.Millisecond, RequestTimeout: 500 * time.Millisecond,
		SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, RebalanceTimeout: 500 * time.Millisecond,
		JoinGroupBackoff: 100 * time.Millisecond, FetchMaxWait: 100 * time.Millisecond,
		JoinTimeout: 800 * time.Millisecond, WatchdogInterval: 50 * time.Millisecond, CloseTimeout: 100 * time.Millisecond,
	}
	src := newSource(t, cfg, "t", reg)
	stop := runSource(t, src, func(context.Context, stream.Claim) error {
		t.Error("a handler ran without a broker")
		return nil
	})
	const restarts = "changerate_kafka_group_restarts_total"
	waitFor(t, "three watchdog restarts", func() bool { return metricSum(t, reg, restarts) >= 3 })
	if g, n := src.Status(); g != 0 || n != 0 {
		t.Errorf("Status = generation %d, %d partitions; want 0, 0 without a broker", g, n)
	}
	t0 := time.Now()
	if err := stop(); err != nil && !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("%v restarts (join_timeout); Run returned %v after cancellation", metricSum(t, reg, restarts), time.Since(t0).Round(time.Millisecond))
}

// TestKafkaSourceSilentConnection: the broker's connections go silent
// (toxiproxy's timeout toxic: bytes are swallowed, nothing is answered,
// nothing is closed) while the source owns the partition. Each fetch is
// abandoned at its deadline; the watchdog restarts the group; once the
// network is back, new records arrive without anything else doing.
func TestKafkaSourceSilentConnection(t *testing.T) {
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	frontAddr := front.Addr().String()
	front.Close()
	c := kafkatest.StartWith(t, kafkatest.Options{Topics: []kafkatest.Topic{{Name: "t", Partitions: 1}}, Advertise: frontAddr})
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	proxy := toxiproxy.NewProxy(srv, "kafka", frontAddr, c.ListenerAddr())
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)

	reg := prometheus.NewRegistry()
	cfg := testConfig(c, "silent-conn")
	cfg.RequestTimeout = time.Second
	cfg.FetchTimeoutSlack = 300 * time.Millisecond
	cfg.FetchStallTimeout = 1500 * time.Millisecond
	cfg.JoinTimeout = 4 * time.Second
	cfg.WatchdogInterval = 50 * time.Millisecond
	cfg.CloseTimeout = 200 * time.Millisecond
	src := newSource(t, cfg, "t", reg)
	col := &collector{}
	runSource(t, src, col.handle)

	produce := func(from int) {
		var recs []kafkatest.Record
		for i := from; i < from+10; i++ {
			recs = append(recs, kafkatest.Record{Value: []byte(fmt.Sprint(i))})
		}
		c.ProduceTo(t, "t", 0, recs...)
	}
	produce(0)
	waitFor(t, "the first 10 records", func() bool { return col.count() >= 10 })

	for _, s := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"silent-%s","type":"timeout","stream":%q,"attributes":{"timeout":0}}`, s, s)
		if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			t.Fatal(err)
		}
	}
	silent := time.Now()
	const timeouts, restarts = "changerate_kafka_request_timeouts_total", "changerate_kafka_group_restarts_total"
	waitFor(t, "a fetch timeout and a watchdog restart", func() bool {
		return metricSum(t, reg, timeouts) >= 1 && metricSum(t, reg, restarts) >= 1
	})
	t.Logf("silent for %v: %v fetch timeouts, %v restarts", time.Since(silent).Round(time.Millisecond),
		metricSum(t, reg, timeouts), metricSum(t, reg, restarts))
	proxy.Toxics.ResetToxics(context.Background())
	back := time.Now()
	produce(10)
	// A new claim starts again from the earliest offset (the collector
	// keeps no offsets): wait for every record, counted once.
	distinct := func() int {
		seen := map[string]bool{}
		for _, m := range col.messages() {
			seen[string(m.Value)] = true
		}
		return len(seen)
	}
	waitFor(t, "the next 10 records after the network came back", func() bool { return distinct() == 20 })
	t.Logf("records flowed again %v after the network came back", time.Since(back).Round(time.Millisecond))
}
