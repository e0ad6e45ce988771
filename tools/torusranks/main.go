// Command torusranks measures one torus run over MPI ranks: a Blue Gene/L
// torus of X×Y×Z nodes (built from Go, as the torus package is), every node
// sending packets to uniformly random others, run in one process or, under
// mpirun with aaemu's mpi build tag, over the ranks. Rank 0 prints the wall
// times, the windows, what the ranks exchanged, and a digest of the outcome
// (every node's deliveries and the statistics), which must not depend on
// the ranks.
//
//	go run ./tools/torusranks -dims 16x16x16
//	go build -tags mpi -o torusranks ./tools/torusranks && mpirun -np 4 ./torusranks -dims 16x16x16
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aaemu/aaemu/internal/mpi"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// traffic is one node's message layer: it injects its packets as room
// allows and counts and sums what it receives.
type traffic struct {
	nd         *torus.Node
	queue      []*torus.Packet
	fifos      int
	got, sum   uint64
	lastArrive uint64
}

func (g *traffic) Tick(now sim.Tick) bool {
	for f := 0; f < torus.NumRecFIFOs; f++ {
		for p := g.nd.Receive(f); p != nil; p = g.nd.Receive(f) {
			g.got++
			g.sum = g.sum*31 + binary.LittleEndian.Uint64(p.Soft[:]) + uint64(len(p.Payload))
			g.lastArrive = uint64(now)
		}
	}
	for len(g.queue) > 0 {
		p := g.queue[0]
		err := g.nd.Inject(int(p.Soft[0])%g.fifos, p)
		if err == torus.ErrFIFOFull {
			break
		}
		if err != nil {
			panic(err)
		}
		g.queue = g.queue[1:]
	}
	return false
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "torusranks: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	dims := flag.String("dims", "8x8x8", "the torus's size, XxYxZ")
	packets := flag.Int("packets", 4, "packets each node sends")
	seed := flag.Uint64("seed", 1, "root seed")
	flag.Parse()
	var x, y, z int
	if _, err := fmt.Sscanf(*dims, "%dx%dx%d", &x, &y, &z); err != nil || x < 1 || y < 1 || z < 1 {
		return fmt.Errorf("-dims %q: want XxYxZ", *dims)
	}
	job, err := mpi.Init()
	if err != nil {
		return err
	}
	if job != nil {
		defer job.Finalize()
	}
	t0 := time.Now()
	w := sim.NewWorld(*seed)
	spec := torus.DefaultSpec(x, y, z)
	net, err := torus.New(w, "torus", spec)
	if err != nil {
		return err
	}
	gens := make([]*traffic, len(net.Nodes))
	for i, nd := range net.Nodes {
		g := &traffic{nd: nd, fifos: spec.InjFIFOs}
		gens[i] = g
		u := nd.Clk.Add(fmt.Sprintf("torus.node[%d].ml", i), g)
		nd.NotifyReceive(u)
		nd.NotifyRoom(u)
		nd.Eng.Keep(sim.Uint64s(&g.got, &g.sum, &g.lastArrive))
		rng := w.Rand(fmt.Sprintf("traffic.%d", i))
		for k := 0; k < *packets; k++ {
			j := int(rng.Uint32N(uint32(len(net.Nodes) - 1)))
			if j >= i {
				j++
			}
			p := &torus.Packet{Dst: net.CoordOf(j), Dynamic: true, Payload: make([]byte, rng.Uint32N(torus.MaxPayload+1))}
			binary.LittleEndian.PutUint32(p.Soft[:4], uint32(i))
			binary.LittleEndian.PutUint32(p.Soft[4:], uint32(k))
			g.queue = append(g.queue, p)
		}
		u.WakeAt(0)
	}
	ranks := 1
	if job != nil && job.Size() > 1 {
		ranks = job.Size()
		if err := w.SetComm(job); err != nil {
			return err
		}
	}
	t1 := time.Now()
	end := w.Run(sim.S)
	if err := w.Sync(); err != nil {
		return err
	}
	t2 := time.Now()
	msgs, bytes := w.RankTraffic()
	var b []byte
	b = binary.AppendUvarint(b, msgs)
	b = binary.AppendUvarint(b, bytes)
	var total [2]uint64
	for _, m := range w.Allgather(b) {
		for i := range total {
			v, n := binary.Uvarint(m)
			total[i] += v
			m = m[n:]
		}
	}
	if w.Rank() != 0 {
		return nil
	}
	h := sha256.New()
	var delivered uint64
	for _, g := range gens {
		delivered += g.got
		fmt.Fprintf(h, "%d %d %d\n", g.got, g.sum, g.lastArrive)
	}
	json.NewEncoder(h).Encode(w.Snapshot())
	win := w.Windows()
	fmt.Printf("torus %dx%dx%d, %d ranks: %d packets delivered of %d by %v simulated, %d windows\n",
		x, y, z, ranks, delivered, len(net.Nodes)**packets, end, win)
	fmt.Printf("wall: build %.2f s, run %.2f s; exchanged %d messages, %d bytes (%.1f messages, %.0f bytes a window)\n",
		t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds(), total[0], total[1], float64(total[0])/float64(max(win, 1)), float64(total[1])/float64(max(win, 1)))
	fmt.Printf("outcome digest %x\n", h.Sum(nil)[:8])
	return nil
}
