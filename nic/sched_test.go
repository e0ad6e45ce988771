package nic

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/sim"
)

// TestSchedMatchesScan runs random srd traffic among ten nodes over lossy
// wires, with few DMA tags (reads wait for them), receive buffers that run
// out (RNR NAKs) and retry counts low enough that some contexts give up,
// while every NIC checks its scheduling sets against the scan of its active
// list at every edge (schedCheck): the QPs it skips had nothing to do, the
// requester, the answer of schedule, the wake time and the active set are
// the scan's.
func TestSchedMatchesScan(t *testing.T) {
	if !schedCheck {
		t.Fatal("the package's tests run without the check")
	}
	const nodes, queues, perQueue = 10, 3, 40
	var retrans, rnr, exceeded, timeouts uint64
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			b := newSRDBench(t, seed, nodes, queues, func(i int) uint32 { return uint32(25_000 * (i % 3)) })
			rng := sim.NewRand(seed, "traffic")
			for i, nd := range b.nodes {
				// 32 tags: a few contexts' payloads and READ data use them up.
				req, err := pcie.NewRequester(nd.n.spec.ID, 5)
				if err != nil {
					t.Fatal(err)
				}
				nd.n.req, nd.n.spec.TagBits = req, 5
				retry := 7 // retry_cnt 1 on odd nodes; rnr_retry finite (SENDs to full queues give up)
				if i%2 == 1 {
					retry = 1
				}
				if err := nd.n.SetPeerRetry(retry, 2); err != nil {
					t.Fatal(err)
				}
			}
			srdFill(b)
			for j := range b.nodes {
				for k := 0; k < queues; k++ {
					b.postRecv(j, k, srdRecv+uint64(j*queues+k)*srdSlot, srdSlot/8, 4) // fewer than arrive
				}
			}
			b.run(10 * sim.US)
			for round := 0; round < 2; round++ {
				for i := range b.nodes {
					for k := 0; k < queues; k++ {
						var ws []WQE
						for len(ws) < perQueue/2 {
							j := rng.IntN(nodes)
							if j == i {
								continue
							}
							op := rng.IntN(5)
							w := srdOps(b, i, k, j)[op]
							if op < 2 && rng.IntN(2) == 0 {
								w.Length = uint32(4000 + rng.IntN(12000)) // up to 32 reads of MRRS: more than the tags
							}
							w.Signaled = rng.IntN(2) == 0
							ws = append(ws, w)
						}
						b.post(i, k, ws...)
					}
				}
				b.run(b.e.Now() + 50*sim.US) // the second round joins the first's retries
			}
			b.run(sim.S)
			for _, nd := range b.nodes {
				h := nd.n.Health()
				retrans += h.Retransmitted
				timeouts += h.Timeouts
				exceeded += h.RetryExceeded
				rnr += nd.n.stRNR.Value()
			}
		})
	}
	t.Logf("retransmitted %d, timeouts %d, retries exceeded %d, RNR NAKs %d", retrans, timeouts, exceeded, rnr)
	if retrans == 0 || timeouts == 0 || exceeded == 0 || rnr == 0 {
		t.Errorf("the traffic missed a case: retransmitted %d, timeouts %d, retries exceeded %d, RNR NAKs %d", retrans, timeouts, exceeded, rnr)
	}
}
