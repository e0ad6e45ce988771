package mpi

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// fabric is a way of placing n ranks: all on one node (shared memory),
// one per node (RDMA), or spread cyclically over two or more nodes so that
// neighbours talk over the network and ranks two apart over shared memory.
type fabric struct {
	name  string
	build func(n int) (nodes, cores int, cfg Config)
}

var fabrics = []fabric{
	{"shm", func(n int) (int, int, Config) { return 2, n, Config{Nodes: 1, PerNode: n} }},
	{"rdma", func(n int) (int, int, Config) { return max(n, 2), 1, Config{Nodes: n, PerNode: 1} }},
	{"mixed", func(n int) (int, int, Config) {
		nodes := 2
		for nodes*nodes < n {
			nodes *= 2
		}
		cores := (n + nodes - 1) / nodes
		return nodes, cores, Config{Ranks: n, Place: func(r int) Place { return Place{Node: r % nodes, Core: r / nodes} }}
	}},
}

// run runs body on n ranks of fabric f; mut adjusts the machine and the
// configuration.
func run(t testing.TB, f fabric, n int, mut func(*machine.Spec, *Config), body func(c *Comm)) (*Result, *machine.Cluster, error) {
	t.Helper()
	nodes, cores, cfg := f.build(n)
	s := machine.DefaultSpec()
	s.Nodes, s.Cores = nodes, cores
	if mut != nil {
		mut(&s, &cfg)
	}
	c, err := machine.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(c, cfg, body)
	return res, c, err
}

// fast is a 100 Gb/s network with 4 kB frames: big messages simulate
// quickly.
func fast(s *machine.Spec, _ *Config) {
	s.Wire.RateMbps = 100_000
	s.NIC.PMTU = 4096
}

// pattern is the content of message id: its id in the first 8 bytes (when
// it has them), then bytes that depend on id and position.
func pattern(id uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(uint64(i)*131 + id*7 + uint64(i>>9))
	}
	if n >= 8 {
		binary.LittleEndian.PutUint64(b, id)
	}
	return b
}

func checkPattern(b []byte, id uint64, n int) error {
	want := pattern(id, n)
	if len(b) < n {
		return fmt.Errorf("%d bytes, want %d", len(b), n)
	}
	for i := 0; i < n; i++ {
		if b[i] != want[i] {
			return fmt.Errorf("message %d byte %d: %#x, want %#x", id, i, b[i], want[i])
		}
	}
	return nil
}
