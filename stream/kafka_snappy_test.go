package stream_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/compress"
	kafkasnappy "github.com/segmentio/kafka-go/compress/snappy"

	"github.com/changerate/changerate/internal/cputime"
	"github.com/changerate/changerate/internal/kafkatest"
	"github.com/changerate/changerate/stream"
)

// estimateLike returns n JSON values shaped like the aggregator's
// estimate records (~800 bytes: an object's URL twice, times, a dozen
// rates and intervals of 16–19 significant digits), seeded.
func estimateLike(n int) [][]byte {
	r := rand.New(rand.NewPCG(35, 1))
	f := func() string { return strconv.FormatFloat(r.ExpFloat64()*3e-6, 'f', -1, 64) }
	var vals [][]byte
	for i := range n {
		url := fmt.Sprintf("https://news%d.example.org/section-%d/2026/11/article-%07d.html", i%97, i%13, i)
		v := fmt.Appendf(nil, `{"object":%q,"site":"news%d.example.org","kind":"change","as_of":"2026-01-05T%02d:%02d:%02d.%03dZ",`+
			`"rate_per_s":%s,"estimator":"pooled","ci95":[%s,%s],"estimates":{"bayes_beta":%s,"cgm_improved":%s,"cgm_irregular_mle":%s,"naive":%s,"pooled":%s},`+
			`"intervals":{"bayes_beta":[%s,%s],"cgm_improved":[0,%s],"naive":[0,%s],"pooled":[%s,%s]},"observations":%d,"changes":%d,`+
			`"window":{"state":"forming","start":"2026-01-01T%02d:%02d:%02d.%03dZ","points":%d},"next_visit":"2026-01-07T08:52:33.221Z",`+
			`"ttl_s":%s,"plan_evidence":[%d,%s],"plan_prior":[%s,%s],"plan_omega":0.5}`,
			url, i%97, r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000), f(), f(), f(), f(), f(), f(), f(), f(), f(), f(), f(), f(), f(), f(),
			2+r.IntN(4), r.IntN(3), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000), r.IntN(3), f(), r.IntN(3), f(), f(), f())
		vals = append(vals, v)
	}
	return vals
}

// compressWith is the bytes codec writes for in.
func compressWith(t testing.TB, codec compress.Codec, in []byte) []byte {
	var out bytes.Buffer
	w := codec.NewWriter(&out)
	if _, err := w.Write(in); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestSnappyWritesFastestEncoder: the codec the sink's "snappy" uses
// (kafka-go's global table) writes what s2's fastest Snappy encoder
// writes, not kafka-go's default encoder (whose bytes differ on the same
// input, so the comparison sees the setting), and kafka-go's snappy
// reader reads the input back.
func TestSnappyWritesFastestEncoder(t *testing.T) {
	in := bytes.Join(estimateLike(200), nil)
	got := compressWith(t, compress.Snappy.Codec(), in)
	if want := compressWith(t, &kafkasnappy.Codec{Compression: kafkasnappy.FasterCompression}, in); !bytes.Equal(got, want) {
		t.Errorf("snappy wrote %d bytes, s2's fastest encoder %d: not the same", len(got), len(want))
	}
	if def := compressWith(t, &kafkasnappy.Codec{}, in); bytes.Equal(got, def) {
		t.Errorf("snappy wrote kafka-go's default encoder's %d bytes", len(def))
	}
	rd := compress.Snappy.Codec().NewReader(bytes.NewReader(got))
	back, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	_ = rd.Close()
	if !bytes.Equal(back, in) {
		t.Errorf("read back %d bytes, wrote %d", len(back), len(in))
	}
}

// TestKafkaKcatReadsSnappy: librdkafka (kcat), whose Snappy decoder is
// not s2's, reads the records the sink wrote with "snappy" byte for byte.
func TestKafkaKcatReadsSnappy(t *testing.T) {
	kafkatest.KcatPath(t)
	forEachSinkMode(t, func(t *testing.T, linger time.Duration) {
		const topic = "estimates"
		c := kafkatest.Start(t, kafkatest.Topic{Name: topic, Partitions: 1})
		cfg := testConfig(c, "kcat-snappy")
		cfg.Linger, cfg.Compression = linger, "snappy"
		sink := newSink(t, cfg, nil)
		vals := estimateLike(300)
		msgs := make([]stream.Message, len(vals))
		for i, v := range vals {
			msgs[i] = stream.Message{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: v}
		}
		if err := sink.Write(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
		out := kafkatest.RunKcat(t, "-b", c.Addr(), "-C", "-t", topic, "-e", "-o", "beginning", "-f", "%k\t%s\n")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != len(msgs) {
			t.Fatalf("kcat printed %d lines, want %d", len(lines), len(msgs))
		}
		for i, l := range lines {
			if want := fmt.Sprintf("k%d\t%s", i, vals[i]); l != want {
				t.Errorf("record %d: kcat read %q, want %q", i, l, want)
			}
		}
	})
}

// BenchmarkProduceCodecs compresses batches of 80 estimate-like records
// with each produce codec's writer: the process's CPU ns per KiB of
// records (the machine is shared: CPU, not the wall clock) and the
// compressed size ÷ the records' size.
func BenchmarkProduceCodecs(b *testing.B) {
	vals := estimateLike(8000)
	var batches [][]byte
	for i := 0; i < len(vals); i += 80 {
		batches = append(batches, bytes.Join(vals[i:i+80], nil))
	}
	for _, c := range []struct {
		name  string
		codec compress.Codec
	}{
		{"snappy", compress.Snappy.Codec()},
		{"snappy-default", &kafkasnappy.Codec{}},
		{"lz4", compress.Lz4.Codec()},
		{"zstd", compress.Zstd.Codec()},
	} {
		b.Run(c.name, func(b *testing.B) {
			var in, out int
			c0 := cputime.Process()
			for b.Loop() {
				for _, batch := range batches {
					in += len(batch)
					out += len(compressWith(b, c.codec, batch))
				}
			}
			b.ReportMetric(float64((cputime.Process()-c0).Nanoseconds())/float64(in)*1024, "cpu-ns/KiB")
			b.ReportMetric(float64(out)/float64(in), "ratio")
		})
	}
}
