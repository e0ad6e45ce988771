package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/workload"
)

// MemTerm is a part of a scenario's memory estimate: what needs it, the
// keys whose product makes it large (the first is the one an error names)
// and the bytes.
type MemTerm struct {
	What  string
	Keys  []string
	Bytes float64
}

// Bytes per unit of the estimate, measured (host memory of the Go heap,
// simulated memory included: a touched page of a node's memory is 4 KiB).
const (
	memNode      = 256 << 10 // a node: IOMMU, memory controller, NIC, PCIe, wires, statistics
	memCore      = 16 << 10  // a core of a node, with its MMIO path
	memQP        = 1536      // a connected QP: the NIC's state, rings' page-table entries, the driver's
	memSRDPeer   = 640       // an srd peer context in a NIC (a qp struct and its map entry)
	memTLBEntry  = 96        // an IOTLB entry
	memCacheLine = 32        // a line of an SMP core's cache model (a sim.Cache way)
	memPage      = 4096 + 64 // a page of simulated memory, touched
	// memFrame: a frame a wire carried. A wire keeps a slot of every frame
	// of a busy stretch (its queue is compacted only when it empties), so
	// a run's memory grows with its frames.
	memFrame = 640
)

// qpTerm is the NICs' queues: rc connects a QP per core per peer; srd has
// a queue per core and a context (memSRDPeer) per peer a node talks to,
// at most every other node.
func qpTerm(m *MachineSpec, n, cores float64) MemTerm {
	nics := float64(max(m.NICs, 1))
	if m.Transport == machine.TransportSRD {
		return MemTerm{"the srd queues and peer contexts (nodes × NICs × (cores + nodes−1))", []string{"machine.nodes", "machine.cores", "machine.nics"},
			nics * n * (cores*memQP + (n-1)*memSRDPeer)}
	}
	return MemTerm{"the connected QPs (nodes × NICs × (nodes−1) × cores)", []string{"machine.nodes", "machine.cores", "machine.nics"}, nics * n * (n - 1) * cores * memQP}
}

// MemoryEstimate reckons the host memory one experiment of the scenario
// needs at most (the machine, the workload's data in the simulated
// memories and the workload's own bookkeeping), as terms, the largest
// first. It is an estimate from the keys, before anything is allocated:
// Validate refuses a scenario whose estimate exceeds max_memory_mib. A
// sweep runs --jobs experiments at once, each this large.
func (s *Scenario) MemoryEstimate() (uint64, []MemTerm) {
	m := &s.Machine
	n, cores := float64(m.Nodes), float64(m.Cores)
	tlbSets, tlbWays := s.IOTLBShape()
	// threads is the cores and their polling siblings (a core's share,
	// counted as a core's: an upper bound, a sibling has no MMIO path).
	threads := cores
	if m.CPU.PollingHyperthreads == machine.PollingPerCore {
		threads = 2 * cores
	}
	terms := []MemTerm{
		{"the nodes", []string{"machine.nodes", "machine.cores", "machine.cpu.polling_hyperthreads"}, n * (memNode + threads*memCore)},
		qpTerm(m, n, cores),
		{"the IOTLBs", []string{"machine.iommu.iotlb_sets", "machine.iommu.iotlb_ways", "machine.iommu.iotlb_entries", "machine.nodes"},
			n * float64(tlbSets) * float64(tlbWays) * memTLBEntry},
	}
	if c := m.CPU.Coherence; c != nil {
		// Every core, its sibling (polling_hyperthreads: core) and the
		// node's polling thread has an L2 of l2_kb / line_bytes
		// ways, each a cache entry.
		line := float64(c.LineBytes)
		if line == 0 {
			line = 64
		}
		terms = append(terms, MemTerm{"the SMP caches (nodes × (cores, polling threads) × l2_kb / line_bytes lines)",
			[]string{"machine.cpu.coherence.l2_kb", "machine.cpu.coherence.line_bytes", "machine.cores", "machine.nodes"},
			n * (threads + 1) * float64(c.L2KB) * 1024 / line * memCacheLine})
	}
	w := &s.Workload
	procs := func(p int) float64 {
		if p == 0 {
			return cores
		}
		return float64(p)
	}
	page := func(bytes float64) float64 { return bytes / 4096 * memPage }
	switch w.Kind {
	case KindDHT:
		d := &w.DHT
		srcs, shards, logs := 1.0, 1.0, 1.0
		if d.ProcsPerNode > 0 {
			srcs, shards = n*float64(d.ProcsPerNode), n
			if d.AALogs == "process" {
				logs = float64(d.ProcsPerNode)
			}
		}
		keys := srcs * float64(d.Inserts)
		logBytes := float64(d.LogBytes)
		if logBytes == 0 {
			logBytes = 64 << 10
		}
		cells := float64(d.Cells)
		counts := shards * cells * 8 // the cells' key counts, a slice for small tables
		if d.Cells > 1<<16 {
			counts = min(keys, shards*cells) * 64
		}
		who := []string{"workload.dht.inserts", "workload.dht.procs_per_node", "machine.nodes"}
		if d.ProcsPerNode == 0 {
			who = who[:1]
		}
		ops := keys * (1 + d.Lookups + d.Deletes)
		terms = append(terms,
			MemTerm{"the DHT's keys and the frames of their operations", who, keys*96 + ops*2*memFrame},
			MemTerm{"the DHT's tables (the pages their keys touch)", append([]string{"workload.dht.cells"}, who...),
				page(min(shards*cells*32, keys*4096)) + keys*32 + counts},
			MemTerm{"the access logs", []string{"workload.dht.log_bytes", "workload.dht.procs_per_node", "machine.nodes"},
				page(shards * logs * logBytes)})
	case KindCounter:
		c := &w.Counter
		srcs := (n - 1) * procs(c.Procs)
		elems := float64(c.Elements) * 8
		inbox := 0.0
		if len(c.Schemes) == 0 || slices.Contains(c.Schemes, string(workload.Allreduce)) {
			inbox = (srcs + 1) * (3*page(elems) + 4096) // each Allreduce rank's vector, two receive areas and a page of flags
		}
		terms = append(terms,
			MemTerm{"the counter's accesses", []string{"workload.counter.accesses", "workload.counter.procs_per_node", "machine.nodes"},
				srcs * float64(c.Accesses) * (24 + 2*memFrame)},
			MemTerm{"the counter's arrays", []string{"workload.counter.elements", "workload.counter.procs_per_node", "machine.nodes"},
				3*page(elems) + inbox})
	case KindGetLog:
		g := &w.GetLog
		gets := n * procs(g.Procs) * float64(g.Gets)
		terms = append(terms, MemTerm{"the gets and their logs", []string{"workload.getlog.gets", "workload.getlog.procs_per_node", "machine.nodes"},
			gets * (160 + 3*memFrame)})
	case KindCheckpoint:
		c := &w.Checkpoint
		terms = append(terms,
			MemTerm{"the checkpointed region and its copy", []string{"workload.checkpoint.pages"}, 3 * float64(c.Pages) * memPage},
			MemTerm{"the frames of the puts and copies", []string{"workload.checkpoint.puts", "workload.checkpoint.epochs"},
				float64(c.Epochs) * (float64(c.Puts) + float64(c.Pages)) * 2 * memFrame})
	case KindXOR:
		terms = append(terms, MemTerm{"the checkpoints and their frames", []string{"workload.xor.words", "machine.nodes"},
			n * (page(float64(w.XOR.Words)*8)*2 + float64(w.XOR.Words)*8/float64(max(m.NIC.PMTU, 1))*4*memFrame)})
	case KindStream:
		st := &w.Stream
		frames := float64(st.Messages) * float64((st.MsgBytes+m.NIC.PMTU-1)/max(m.NIC.PMTU, 1))
		terms = append(terms, MemTerm{"the stream's buffers and frames", []string{"workload.stream.messages", "workload.stream.msg_bytes"},
			2*page(float64(st.Messages)*float64(st.MsgBytes)) + 2*frames*memFrame})
	case KindSort:
		so := &w.Sort
		p := n * procs(so.Procs)
		keys := p * float64(so.Keys)
		terms = append(terms,
			MemTerm{"the sort's keys, buckets and logs", []string{"workload.sort.keys", "workload.sort.procs_per_node", "machine.nodes"},
				keys * (8*12 + 16.0/float64(max(m.NIC.PMTU, 1))*memFrame)},
			MemTerm{"the sort's samples (every process gathers every process's)", []string{"workload.sort.procs_per_node", "machine.nodes"},
				p * p * p * 8 * 3})
	case KindSplitC:
		terms = append(terms, s.splitCMemory()...)
	}
	slices.SortStableFunc(terms, func(a, b MemTerm) int {
		switch {
		case a.Bytes > b.Bytes:
			return -1
		case a.Bytes < b.Bytes:
			return 1
		}
		return 0
	})
	total := 0.0
	for _, t := range terms {
		total += t.Bytes
	}
	if total >= 1<<63 {
		return 1 << 63, terms
	}
	return uint64(total), terms
}

// checkMemory refuses a scenario whose estimate exceeds max_memory_mib,
// naming the largest term's keys.
func (s *Scenario) checkMemory() (string, error) {
	total, terms := s.MemoryEstimate()
	limit := s.MaxMemoryMiB << 20
	if total <= limit {
		return "", nil
	}
	t := terms[0]
	return t.Keys[0], input.Errorf(fmt.Sprintf("at most max_memory_mib, %d MiB: %s, or raise max_memory_mib", s.MaxMemoryMiB, lessen(t.Keys)),
		"the scenario needs about %s of memory, %s for %s", size(float64(total)), size(t.Bytes), t.What)
}

// smallerChoice is the value that makes a term smaller, for the keys that
// are choices rather than numbers.
var smallerChoice = map[string]string{
	"machine.cpu.polling_hyperthreads": "node",
}

// lessen says how the keys make a term smaller: the numbers smaller, a
// choice set to its smaller value.
func lessen(keys []string) string {
	var nums, choices []string
	for _, k := range keys {
		if v, ok := smallerChoice[k]; ok {
			choices = append(choices, k+": "+v)
		} else {
			nums = append(nums, k)
		}
	}
	parts := choices
	if len(nums) > 0 {
		parts = append([]string{"make " + strings.Join(nums, " or ") + " smaller"}, choices...)
	}
	return strings.Join(parts, ", or ")
}

// size writes a byte count for people.
func size(b float64) string {
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if b < 1024 || u == "TiB" {
			return fmt.Sprintf("%.3g %s", b, u)
		}
		b /= 1024
	}
	return ""
}
