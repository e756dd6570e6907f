package windows

import "testing"

// BenchmarkEvent measures the per-update cost of Segmenter.Event on a
// homogeneous Poisson stream with occasional rate steps.
func BenchmarkEvent(b *testing.B) {
	cfg := DefaultConfig()
	r := newRand(1)
	gaps := make([]float64, 1<<16)
	for i := range gaps {
		rate := 1.0
		if (i/2000)%2 == 1 {
			rate = 4
		}
		gaps[i] = r.ExpFloat64() * 3600 / rate
	}
	var s Segmenter
	tm := 1.7e9
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tm += gaps[i&(len(gaps)-1)]
		s.Event(tm, &cfg)
	}
}

func BenchmarkCurrent(b *testing.B) {
	cfg := DefaultConfig()
	var s Segmenter
	r := newRand(2)
	tm := 1.7e9
	for i := 0; i < 500; i++ {
		tm += r.ExpFloat64() * 3600
		s.Event(tm, &cfg)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Current(tm+100, &cfg)
	}
}

func BenchmarkAppendDecode(b *testing.B) {
	cfg := DefaultConfig()
	var s Segmenter
	r := newRand(2)
	tm := 1.7e9
	for i := 0; i < 500; i++ {
		tm += r.ExpFloat64() * 3600
		s.Event(tm, &cfg)
	}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = s.AppendBinary(buf[:0])
		var d Segmenter
		if _, err := d.DecodeBinary(buf); err != nil {
			b.Fatal(err)
		}
	}
}
