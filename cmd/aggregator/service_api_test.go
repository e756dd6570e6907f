package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/internal/redistest"
	"github.com/changerate/changerate/query"
	"github.com/changerate/changerate/records"
)

// TestServiceAPI runs the aggregator in service mode — a Kafka-protocol
// broker with several partitions and a real redis-server — and queries its
// API: /v1/objects finds every object's state in Redis in the partition its
// observations were produced to, and /v1/top ranks what it published.
func TestServiceAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka-protocol broker and a redis-server")
	}
	rs := redistest.Start(t)
	kc := kafkatest.Start(t, kafkatest.Topic{Name: "observations", Partitions: 4})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	// CGM Example 1 on 12 objects (object i changes at the same visits).
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	changed := []bool{true, false, true, true, false, true, false, true, false, true}
	var recs []kafkatest.Record
	for i := 0; i <= 10; i++ {
		for k := 0; k < 12; k++ {
			o := records.Observation{Object: fmt.Sprintf("http://s%d.example/p%d", k%3, k), Time: t0.Add(time.Duration(i) * 24 * time.Hour),
				Kind: records.KindVisit, Changed: records.Unchanged}
			if i > 0 && changed[i-1] {
				o.Changed = records.Changed
			}
			b, _ := json.Marshal(o)
			recs = append(recs, kafkatest.Record{Key: []byte(o.Object), Value: b})
		}
	}
	produced := kc.Produce(t, "observations", recs...)
	parts := map[int32]bool{}
	for _, r := range produced {
		parts[r.Partition] = true
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--kafka-brokers=" + kc.Addr(), "--redis-addrs=" + rs.Addr, "--http-addr=" + addr,
			"--emit-interval=0", "--kafka-session-timeout=6s", "--kafka-heartbeat=500ms", "--log-level=warn",
			"--kafka-group=api-test", "--redis-require-durable=false"}, strings.NewReader(""), io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("aggregator: %v", err)
		}
	}()
	get := func(path string, v any) int {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		if resp.StatusCode == 200 && v != nil {
			if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode
	}
	// Wait until every object's estimate is ranked.
	var top query.TopResult
	for deadline := time.Now().Add(90 * time.Second); ; {
		if get("/v1/top?limit=100", &top) == 200 && len(top.Objects) == 12 && top.Objects[0].Observations == 11 &&
			top.Objects[11].Observations == 11 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the aggregator did not publish the 12 estimates: %d ranked", len(top.Objects))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for k := 0; k < 12; k++ {
		var e records.Estimate
		name := fmt.Sprintf("http://s%d.example/p%d", k%3, k)
		if st := get("/v1/objects?url="+url.QueryEscape(strings.ToUpper(name[:12])+name[12:]), &e); st != 200 {
			t.Fatalf("%s: status %d", name, st)
		}
		// CGM Example 1: −log(4.5/10.5) = 0.8473 changes per day.
		if perDay := e.Estimates["cgm_improved"] * 86400; e.Object != name || perDay < 0.8472 || perDay > 0.8474 || e.Observations != 11 {
			t.Errorf("%s: object %s, cgm_improved %.4f/day, %d visits", name, e.Object, perDay, e.Observations)
		}
	}
	if len(parts) < 3 {
		t.Errorf("the objects used %d of 4 partitions: the locator is barely tested", len(parts))
	}
	var plan query.PlanResult
	if st := get("/v1/plan?budget=24&period=24h&site=s1.example", &plan); st != 200 || len(plan.Visits) != 24 || plan.Objects != 4 {
		t.Errorf("plan: status %d, %d visits over %d objects; want 24 over the 4 objects of s1.example", st, len(plan.Visits), plan.Objects)
	}
}
