package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// Example reads a Squid log into a sink: one observation (a revalidation
// that found the page changed) and one dead letter.
func Example() {
	dir, _ := os.MkdirTemp("", "ingest-example")
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "access.log")
	os.WriteFile(log, []byte("1157689320.327 2864 10.0.0.1 TCP_REFRESH_MODIFIED/200 10182 GET http://www.example.com/ - DIRECT/1.2.3.4 text/html\nbroken line\n"), 0o644)

	sink := stream.NewMemorySink() // stream.NewWriterSink(...) for --out=-, stream.NewKafkaSink(...) for Kafka
	sum, err := ingest.Run(context.Background(), ingest.Config{Format: "squid", Paths: []string{log}, ProgressInterval: -1}, sink, nil, nil)
	if err != nil {
		panic(err)
	}
	for _, m := range sink.Messages(stream.TopicObservations) {
		o, _ := records.DecodeObservation(m.Value)
		fmt.Println(string(m.Key), o.Kind, o.Changed == records.Changed, o.Offset)
	}
	fmt.Println(len(sink.Messages(stream.TopicDeadLetter)), "dead letter;", sum.Inputs[0].Lines, "lines,", sum.Inputs[0].Rejects)
	// Output:
	// http://www.example.com/ revalidation true 115
	// 1 dead letter; 2 lines, map[fields:1]
}
