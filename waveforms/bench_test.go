package waveforms

import (
	"io"
	"testing"
)

// BenchmarkVCDValueChanges writes value changes of 64 signals (1-bit and
// 32-bit) to a discarding writer: the writer's own speed.
func BenchmarkVCDValueChanges(b *testing.B) {
	w := NewWriter(io.Discard, Options{})
	ids := make([]int, 64)
	for i := range ids {
		width := 1
		if i%2 == 1 {
			width = 32
		}
		ids[i], _ = w.Declare("top.blk"+string(rune('a'+i%26))+".s"+string(rune('a'+i/26)), width)
	}
	b.ReportAllocs()
	b.ResetTimer()
	t := uint64(0)
	for i := 0; i < b.N; i++ {
		t += 1000
		for j, id := range ids {
			w.Set(t, id, uint64(i+j)) // every signal changes every step
		}
	}
	w.Close(t + 1)
	b.ReportMetric(float64(w.Changes())/b.Elapsed().Seconds(), "changes/s")
}
