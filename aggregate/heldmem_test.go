package aggregate

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/changerate/changerate/records"
)

// BenchmarkReorderHeldBytes reports the heap bytes one held observation
// costs (decoded from a typical crawler line: URL, site, digest, source).
func BenchmarkReorderHeldBytes(b *testing.B) {
	const n = 100000
	for b.Loop() {
		b.StopTimer()
		var lines [][]byte
		for i := range n {
			lines = append(lines, []byte(fmt.Sprintf(`{"object":"http://www.example%d.org/section/page-%d.html","site":"www.example%d.org","time":"2026-10-01T00:%02d:%02d.123Z","kind":"visit","digest":"sha1:M2AYUMOEI4ULAW3YN5O47QG4O4MMDGIK","status":200,"format":"heritrix","source":"/var/log/heritrix/crawl.log@123456","offset":%d}`, i%100, i, i%100, (i/60)%60, i%60, i*300)))
		}
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		rb := newReorderBuf(time.Hour)
		for i, l := range lines {
			o, err := records.DecodeObservation(l)
			if err != nil {
				b.Fatal(err)
			}
			rb.push(&o, int64(i))
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "B/held")
		runtime.KeepAlive(rb)
		runtime.KeepAlive(lines)
		b.StartTimer()
	}
}
