package machine

import "testing"

func TestAutoPartitions(t *testing.T) {
	for _, c := range []struct{ nodes, cores, host, want int }{
		{2, 1, 2, 1},       // the default scenario: one goroutine
		{4, 4, 8, 1},       // 16 cores of work: still one
		{16, 4, 2, 2},      // 64 cores: two
		{4, 32, 2, 2},      // 128 cores, a 2-core host: two
		{1024, 32, 2, 2},   // never more than the host's cores
		{1024, 32, 64, 64}, //
		{2, 1, 1, 1},
	} {
		if got := AutoPartitions(c.nodes, c.cores, c.host); got != c.want {
			t.Errorf("%d nodes × %d cores on %d host cores: %d partitions, want %d", c.nodes, c.cores, c.host, got, c.want)
		}
	}
}
