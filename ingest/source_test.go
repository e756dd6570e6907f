package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

func feedMessage(i int) []byte {
	return fmt.Appendf(nil, `{"timestamp":"2016-01-27T21:19:%02d.200Z","status_code":200,"url":"http://a.example/%d","content_digest":"sha1:AAAA%d","annotations":"ip:1.2.3.4"}`, i%60, i, i)
}

// TestRunSourceHeritrixFeed reads the Heritrix Kafka crawl-log feed from a
// Kafka-protocol broker (kfake) through stream.KafkaSource, with a
// checkpoint, a restart and a bad message.
func TestRunSourceHeritrixFeed(t *testing.T) {
	const topic = "heritrix-crawl-log"
	c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 2})
	var recs []kafkatest.Record
	for i := 0; i < 20; i++ {
		recs = append(recs, kafkatest.Record{Key: []byte(fmt.Sprint(i)), Value: feedMessage(i)})
	}
	recs = append(recs, kafkatest.Record{Key: []byte("bad"), Value: []byte(`{"timestamp":"nope"}`)})
	c.Produce(t, topic, recs...)
	cp := filepath.Join(t.TempDir(), "cp.json")
	cfg := Config{Format: "heritrix-json", CheckpointPath: cp, BatchSize: 4, ProgressInterval: -1}
	kcfg := stream.KafkaConfig{Brokers: c.Addrs(), GroupID: "ingest-test", SessionTimeout: 3 * time.Second,
		HeartbeatInterval: 100 * time.Millisecond, RebalanceTimeout: 3 * time.Second, FetchMaxWait: 50 * time.Millisecond,
		JoinGroupBackoff: 100 * time.Millisecond, RetryBackoff: 50 * time.Millisecond, CommitInterval: 50 * time.Millisecond}

	consume := func(want int) (*stream.MemorySink, Summary) {
		t.Helper()
		src, err := stream.NewKafkaSource(kcfg, []string{topic}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		sink := stream.NewMemorySink()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		var sum Summary
		go func() {
			var err error
			sum, err = RunSource(ctx, cfg, src, sink, nil, nil)
			done <- err
		}()
		deadline := time.Now().Add(30 * time.Second)
		for len(sink.Messages(stream.TopicObservations))+len(sink.Messages(stream.TopicDeadLetter)) < want {
			if time.Now().After(deadline) {
				t.Fatalf("have %d messages, want %d", len(sink.Messages(stream.TopicObservations)), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // give a wrongly repeated message time to show up
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return sink, sum
	}

	sink, sum := consume(21)
	obs := sink.Messages(stream.TopicObservations)
	dls := sink.Messages(stream.TopicDeadLetter)
	if len(obs) != 20 || len(dls) != 1 || !sum.Interrupted {
		t.Fatalf("%d observations, %d dead letters, summary %+v", len(obs), len(dls), sum)
	}
	if !strings.Contains(string(dls[0].Value), `"position":"heritrix-crawl-log/`) || !strings.Contains(string(dls[0].Value), `"reason":"fields"`) {
		t.Fatalf("dead letter %s", dls[0].Value)
	}
	for _, m := range obs {
		o, err := records.DecodeObservation(m.Value)
		if err != nil || o.Format != "heritrix-json" || o.Offset <= 0 || !strings.HasPrefix(o.Source, "kafka:"+topic+"/") {
			t.Fatalf("%s: %v", m.Value, err)
		}
	}

	// Restart: nothing is read again; new messages are.
	c.Produce(t, topic, kafkatest.Record{Key: []byte("new"), Value: feedMessage(99)})
	sink2, _ := consume(1)
	if got := objects(t, sink2); len(got) != 1 || got[0] != "http://a.example/99" {
		t.Fatalf("after restart: %v", got)
	}
}
