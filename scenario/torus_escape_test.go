package scenario

import (
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/torus"
)

// machine.network.torus.escape_chunks reaches the torus's escape channel
// and only it; a scenario that leaves it out, or sets other torus keys,
// gets the preset's buffer, not 0.
func TestTorusEscapeChunks(t *testing.T) {
	dyn := torus.DefaultSpec(1, 1, 1).VCChunks[torus.VCDynamic0]
	for _, c := range []struct {
		torus string
		want  int
	}{
		{"{}", machine.GeminiEscapeChunks},
		{"{dims: [4, 2, 1], wire_cycles: 3}", machine.GeminiEscapeChunks},
		{"{escape_chunks: 16}", 16},
		{"{escape_chunks: 4096}", 4096},
	} {
		s, err := ParseScenario("s.yaml", []byte("machine:\n  nodes: 8\n  network:\n    topology: torus\n    torus: "+c.torus+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.torus, err)
		}
		sp := s.torusSpec()
		if got := sp.VCChunks[torus.VCEscape]; got != c.want {
			t.Errorf("%s: escape channel %d chunks, want %d", c.torus, got, c.want)
		}
		if got := sp.VCChunks[torus.VCDynamic0]; got != dyn {
			t.Errorf("%s: dynamic channel %d chunks, want %d", c.torus, got, dyn)
		}
	}
}
