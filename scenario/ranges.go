package scenario

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/iommu/record"
)

// keyRange is the range of a numeric key: Validate refuses a value outside
// it before anything is built, and errors give it as what is allowed. The
// ranges bound what one experiment can ask of the host: the memory a key
// scales (see MemoryEstimate for the products of several) and the time
// the set-up takes before the first simulated event.
type keyRange struct {
	key    string
	lo, hi float64
	unit   string // after the numbers: "2..64", "0..1000000000 ns"
	// note: what else to know, after the numbers ("0: 64 KiB").
	note string
	// allowed replaces "lo..hi unit" for keys whose values are a set or
	// need a word (powers of two, PMTUs).
	allowed string
}

// Durations in ns go up to a second; the simulated time of a run is
// bounded by --until (10 s by default).
const maxNS = 1e9

// ranges is every numeric key of a scenario, in the order of the file
// (the order Validate checks them in). A key of a list is written key[]:
// each of its values must be in the range.
var ranges = []keyRange{
	{key: "seed", lo: 0, hi: math.MaxUint64, allowed: "any whole number 0..18446744073709551615"},
	{key: "max_memory_mib", lo: 64, hi: 1 << 20, unit: "MiB", note: "the most memory an experiment's estimate may reach; default 4096"},
	{key: "machine.nodes", lo: 2, hi: 4096, note: "two nodes share a direct link, more a switch, a leaf-spine network or a torus"},
	{key: "machine.cores", lo: 1, hi: 64},
	{key: "machine.nics", lo: 1, hi: 4, note: "RDMA NICs a node, each on its own PCIe link and network plane"},
	{key: "machine.fabric_mhz", lo: 1, hi: 10_000, unit: "MHz", note: "a period that is not a whole number of picoseconds is rounded to the nearest"},
	{key: "machine.wire.rate_mbps", lo: 1, hi: 1_000_000, unit: "Mb/s"},
	{key: "machine.wire.latency_ns", lo: 0, hi: maxNS, unit: "ns"},
	{key: "machine.wire.loss_ppm", lo: 0, hi: 1_000_000, unit: "ppm"},
	{key: "machine.pcie.gen", lo: 1, hi: 5},
	{key: "machine.pcie.width", lo: 1, hi: 16, allowed: "1, 2, 4, 8 or 16 lanes"},
	{key: "machine.pcie.latency_ns", lo: 0, hi: maxNS, unit: "ns"},
	{key: "machine.nic.pmtu", lo: 256, hi: 4096, allowed: "256, 512, 1024, 2048 or 4096 bytes"},
	{key: "machine.nic.retransmit_us", lo: 1, hi: 1_000_000, unit: "µs"},
	{key: "machine.nic.process_ns", lo: 0, hi: 1_000_000, unit: "ns", note: "a received frame's processing; 0: 50 ns"},
	{key: "machine.nic.sram_access_ns", lo: 0, hi: 1_000_000, unit: "ns", note: "an uncached access of the NIC's device memory; 0: 50 ns"},
	{key: "machine.nic.descriptor_ring", lo: 0, hi: 65536, note: "descriptors a ring, a multiple of 8; 0: 256"},
	{key: "machine.nic.interrupt_rate", lo: 0, hi: 100_000, unit: "interrupts/s", note: "with machine.nic.offload: none; 0: no throttle"},
	{key: "machine.nic.driver_rx_cycles", lo: 0, hi: 10_000_000, unit: "cycles", note: "with machine.nic.offload: none; 0: 2780"},
	{key: "machine.nic.driver_tx_cycles", lo: 0, hi: 10_000_000, unit: "cycles", note: "with machine.nic.offload: none; 0: 2780"},
	{key: "machine.nic.active_w", lo: 0, hi: 1000, unit: "W", note: "at least machine.nic.idle_w"},
	{key: "machine.nic.idle_w", lo: 0, hi: 1000, unit: "W"},
	{key: "machine.network.nodes_per_leaf", lo: 1, hi: 64},
	{key: "machine.network.spines", lo: 1, hi: 64},
	{key: "machine.network.switch_latency_ns", lo: 0, hi: maxNS, unit: "ns"},
	{key: "machine.network.router_nj_per_byte", lo: 0, hi: 1000, unit: "nJ"},
	{key: "machine.network.torus.dims[]", lo: 1, hi: 256, note: "x, y and z, their product machine.nodes; none: the nearest a cube"},
	{key: "machine.network.torus.clock_mhz", lo: 1, hi: 10_000, unit: "MHz"},
	{key: "machine.network.torus.bytes_per_cycle", lo: 1, hi: 32, allowed: "1, 2, 4, 8, 16 or 32 bytes a cycle (a divisor of the 32-byte chunk)"},
	{key: "machine.network.torus.wire_cycles", lo: 1, hi: 1 << 20, unit: "cycles"},
	{key: "machine.network.torus.nodes_per_router", lo: 0, hi: 2, note: "a Gemini ASIC serves two; 0: 1"},
	{key: "machine.network.torus.router_cycles", lo: 0, hi: 1 << 20, unit: "cycles"},
	{key: "machine.network.torus.escape_chunks", lo: 16, hi: 4096, unit: "chunks", note: "32 bytes each; two full packets at least, the bubble"},
	{key: "machine.iommu.iotlb_sets", lo: 1, hi: maxIOTLBEntries, note: "sets × ways at most 65536"},
	{key: "machine.iommu.iotlb_ways", lo: 0, hi: 256, note: "sets × ways at most 65536; 0: fully associative, with iotlb_entries"},
	{key: "machine.iommu.iotlb_entries", lo: 0, hi: maxIOTLBEntries, note: "0: iotlb_sets × iotlb_ways; else sets of iotlb_ways ways"},
	{key: "machine.iommu.log_cam_entries", lo: 1, hi: 4096},
	{key: "machine.iommu.flush_buffer_entries", lo: 1, hi: 4096},
	{key: "machine.iommu.process_ns", lo: 0, hi: maxNS, unit: "ns"},
	{key: "machine.iommu.mem_access_ns", lo: 0, hi: maxNS, unit: "ns"},
	{key: "machine.iommu.slots", lo: 0, hi: 1024, note: "TLPs in flight; 0: one at a time"},
	{key: "machine.iommu.flush_waiters", lo: 0, hi: 1024, note: "flush gets a flushing page holds at once; 0: one"},
	{key: "machine.iommu.walkers", lo: 0, hi: 1024, note: "walks in flight, 1..slots with slots > 0; 0 without"},
	{key: "machine.cpu.interrupt_ns", lo: 0, hi: maxNS, unit: "ns"},
	{key: "machine.cpu.scratchpad_ns", lo: 0, hi: maxNS, unit: "ns"},
	{key: "machine.cpu.mhz", lo: 0, hi: maxCPUMHz, unit: "MHz", note: "0: 2000; a period that is not a whole number of picoseconds is rounded to the nearest"},
	{key: "machine.cpu.memcpy_mbps", lo: 0, hi: maxSMPMBps, unit: "MB/s", note: "needs machine.cpu.coherence; 0: a copy costs its loads and stores"},
	{key: "machine.cpu.nic_write_cycles", lo: 0, hi: maxCycles, unit: "cycles", note: "an uncached store's issue cost"},
	{key: "machine.cpu.coherence.line_bytes", lo: 0, hi: 4096, note: "a power of two from 8; 0: 64"},
	{key: "machine.cpu.coherence.l2_kb", lo: 1, hi: maxL2KB, unit: "KB"},
	{key: "machine.cpu.coherence.l2_ways", lo: 0, hi: 64, note: "0: 8"},
	{key: "machine.cpu.coherence.hit_cycles", lo: 0, hi: maxCycles, unit: "cycles"},
	{key: "machine.cpu.coherence.miss_cycles", lo: 1, hi: maxCycles, unit: "cycles"},
	{key: "machine.cpu.coherence.c2c_cycles", lo: 1, hi: maxCycles, unit: "cycles"},
	{key: "machine.cpu.coherence.upgrade_cycles", lo: 0, hi: maxCycles, unit: "cycles"},
	{key: "machine.cpu.coherence.inval_cycles", lo: 0, hi: maxCycles, unit: "cycles"},
	{key: "machine.cpu.coherence.cas_cycles", lo: 1, hi: maxCycles, unit: "cycles"},
	{key: "machine.startx.tx_depth", lo: 0, hi: 1024, unit: "messages", note: "0: 8"},
	{key: "machine.startx.rx_depth", lo: 0, hi: 1024, unit: "messages", note: "the line's credits; 0: 32"},
	{key: "machine.startx.access_ns", lo: 0, hi: 1_000_000, unit: "ns", note: "0: 30"},
	{key: "machine.startx.rdma_packet_bytes", lo: 0, hi: 80, allowed: "a multiple of 8 in 8..80 bytes; 0: 64"},
	{key: "machine.startx.rdma_reads", lo: 0, hi: 32, note: "DMA reads in flight; 0: 1"},
	{key: "machine.startx.rdma_commands", lo: 0, hi: 64, note: "0: 2"},
	{key: "machine.startx.queue_tlps", lo: 0, hi: 1024, note: "0: 16"},
	{key: "machine.startx.access_bytes", lo: 0, hi: 64, allowed: "8 or 64 bytes (block stores and loads); 0: 64"},
	{key: "machine.startx.nius", lo: 0, hi: 4, note: "NIUs a node, each on a PCIe link of its own; more than 1 needs network: crossbar; 0: 1"},
	{key: "machine.startx.dma_mbps", lo: 0, hi: 1_000_000, unit: "MB/s", note: "the NIU's DMA, reads and writes together, capped (an I/O bus); 0: no cap"},
	{key: "machine.startx.rdma_frame_bytes", lo: 0, hi: 65536, allowed: "0 (cut through), or a multiple of rdma_packet_bytes up to 65536 bytes (store and forward)"},
	{key: "machine.startx.line.rate_mbps", lo: 0, hi: 1_000_000, unit: "Mb/s", note: "0: 1200"},
	{key: "machine.startx.line.latency_ns", lo: 0, hi: maxNS, unit: "ns", note: "0: 500"},
	{key: "machine.memory.bandwidth_mbps", lo: 0, hi: maxSMPMBps, unit: "MB/s", note: "needs machine.cpu.coherence; 0: unlimited"},
	{key: "workload.dht.inserts", lo: 1, hi: 10_000_000, note: "per inserting process"},
	{key: "workload.dht.cells", lo: 1, hi: maxCells, allowed: "a power of two 1..16777216"},
	{key: "workload.dht.collisions[]", lo: 0, hi: 1, note: "a fraction of the inserts"},
	{key: "workload.dht.compute_cycles", lo: 0, hi: 1e9},
	{key: "workload.dht.am_poll_ns", lo: 0, hi: maxNS, unit: "ns", note: "0: 1 µs"},
	{key: "workload.dht.procs_per_node", lo: 0, hi: 64, note: "at most machine.cores; 0: one process on node 0"},
	{key: "workload.dht.am_onload_cores", lo: 0, hi: 63, note: "fewer than procs_per_node"},
	{key: "workload.dht.lookups", lo: 0, hi: 1, note: "a fraction of each process's keys"},
	{key: "workload.dht.deletes", lo: 0, hi: 1, note: "a fraction of each process's keys"},
	{key: "workload.dht.log_bytes", lo: 0, hi: maxLogBytes, allowed: "0: 64 KiB, or a multiple of 8 from 96 to 67108864"},
	{key: "workload.dht.aa_int_records", lo: 0, hi: float64(maxLogBytes / 2 / record.Size(16)), note: "records filling at most half the log; 0: every record"},
	{key: "workload.dht.am_int_moderation", lo: 0, hi: maxAMIntModeration, note: "messages per interrupt; 0: 10"},
	{key: "workload.dht.am_int_period_ns", lo: 0, hi: maxNS, unit: "ns", note: "0: 10 µs"},
	{key: "workload.dht.page_zipf", lo: 0, hi: 10, note: "the Zipf exponent of the pages new keys fall in; 0: uniform"},
	{key: "workload.counter.elements", lo: 1, hi: 1 << 20},
	{key: "workload.counter.accesses", lo: 1, hi: 10_000_000, note: "per source process"},
	{key: "workload.counter.procs_per_node", lo: 0, hi: 64, note: "at most machine.cores; 0: every core"},
	{key: "workload.getlog.gets", lo: 1, hi: 10_000_000, note: "per process"},
	{key: "workload.getlog.words", lo: 1, hi: 512, note: "64-bit words of each node's data page"},
	{key: "workload.getlog.procs_per_node", lo: 0, hi: 64, note: "at most machine.cores; 0: every core"},
	{key: "workload.checkpoint.pages", lo: 1, hi: 1 << 16},
	{key: "workload.checkpoint.epochs", lo: 1, hi: 100_000},
	{key: "workload.checkpoint.puts", lo: 0, hi: 10_000_000, note: "per epoch"},
	{key: "workload.xor.words", lo: 1, hi: 1 << 17, note: "64-bit words: 1 MiB"},
	{key: "workload.stream.msg_bytes", lo: 1, hi: 1 << 20, unit: "B", note: "messages × msg_bytes at most 1 GiB"},
	{key: "workload.stream.messages", lo: 2, hi: 1 << 30, note: "messages × msg_bytes at most 1 GiB"},
	{key: "workload.stream.outstanding", lo: 1, hi: 256, note: "the send-queue size"},
	{key: "workload.splitc.nodes", lo: 0, hi: 4096, note: "at most machine.nodes; 0: every node"},
	{key: "workload.splitc.procs_per_node", lo: 0, hi: 64, note: "at most machine.cores; 0: every core"},
	{key: "workload.splitc.fft_n", lo: 2, hi: 1024, note: "a power of two, a multiple of the ranks"},
	{key: "workload.splitc.con_comm_side", lo: 1, hi: 160, note: "nodes a rank: its cube"},
	{key: "workload.splitc.con_comp_side", lo: 1, hi: 2000, note: "nodes a rank: its square"},
	{key: "workload.splitc.em3d_nodes", lo: 2, hi: 1 << 20, note: "per rank"},
	{key: "workload.splitc.em3d_steps", lo: 1, hi: 10_000},
	{key: "workload.splitc.slots", lo: 0, hi: 4096, note: "packets of a shared-memory queue; 0: 256"},
	{key: "workload.splitc.blocks", lo: 0, hi: 256, note: "8 kB bulk blocks of a shared-memory queue; 0: 16"},
	{key: "workload.splitc.net_blocks", lo: 0, hi: 64, note: "8 kB bulk blocks of a network channel; 0: 4"},
	{key: "workload.splitc.staging", lo: 0, hi: 16, note: "an endpoint's staging blocks; 0: 2"},
	{key: "workload.splitc.pending", lo: 0, hi: 65536, note: "requests taken from the NIU ahead of their handlers; 0: 32"},
	{key: "workload.splitc.poll_gap", lo: 0, hi: 100_000, unit: "cycles", note: "between two empty polls of a waiting rank; 0: 32"},
	{key: "workload.sort.keys", lo: 1, hi: 1 << 20, note: "per process, at least one per process of the machine"},
	{key: "workload.sort.procs_per_node", lo: 0, hi: 64, note: "at most machine.cores; 0: every core"},
}

// Limits of keys that need them in code too.
const (
	maxIOTLBEntries = 1 << 16
	maxCells        = 1 << 24
	maxLogBytes     = 1 << 26
	maxCollisions   = 64 // ratios in workload.dht.collisions
	// DefaultMaxMemoryMiB is max_memory_mib's default.
	DefaultMaxMemoryMiB = 4096
)

var rangeOf = func() map[string]*keyRange {
	m := map[string]*keyRange{}
	for i := range ranges {
		m[ranges[i].key] = &ranges[i]
	}
	return m
}()

// text is what the range allows, as errors give it.
func (r *keyRange) text() string {
	a := r.allowed
	if a == "" {
		a = num(r.lo) + ".." + num(r.hi)
		if r.unit != "" {
			a += " " + r.unit
		}
	}
	if r.note != "" {
		a += "; " + r.note
	}
	return a
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// allowed is what a key takes, for the decoder's errors ("" for keys that
// are not numbers).
func allowed(key string) string {
	if r, ok := rangeOf[key]; ok {
		return r.text()
	}
	if r, ok := rangeOf[key+"[]"]; ok {
		return "a list of values " + r.text()
	}
	return ""
}

// outOfRange is the error of a value outside its key's range.
func outOfRange(r *keyRange, v any) *input.Error {
	return input.Errorf(r.text(), "%v is out of range", v)
}

// checkRanges checks every numeric key against its range, in file order;
// it returns the first key out of range.
func (s *Scenario) checkRanges() (string, error) {
	root := reflect.ValueOf(s).Elem()
	for i := range ranges {
		r := &ranges[i]
		if absent(root, strings.TrimSuffix(r.key, "[]")) {
			continue
		}
		v, list := field(root, strings.TrimSuffix(r.key, "[]"))
		if !v.IsValid() {
			panic("scenario: the range of " + r.key + " names no key")
		}
		if !list {
			if bad, ok := inRange(r, v); !ok {
				return r.key, outOfRange(r, bad)
			}
			continue
		}
		for j := 0; j < v.Len(); j++ {
			if bad, ok := inRange(r, v.Index(j)); !ok {
				return fmt.Sprintf("%s[%d]", strings.TrimSuffix(r.key, "[]"), j), outOfRange(r, bad)
			}
		}
	}
	return "", nil
}

// inRange reports whether a numeric value lies in r, and the value.
func inRange(r *keyRange, v reflect.Value) (any, bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x := v.Int()
		return x, float64(x) >= r.lo && float64(x) <= r.hi
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x := v.Uint()
		return x, float64(x) >= r.lo && float64(x) <= r.hi
	case reflect.Float32, reflect.Float64:
		x := v.Float()
		return x, x >= r.lo && x <= r.hi // false for NaN
	}
	panic(fmt.Sprintf("scenario: the range of %s is on a %v", r.key, v.Type()))
}

// field finds a dotted key's value in a scenario (yaml names); list says
// that it is a list.
func field(v reflect.Value, key string) (f reflect.Value, list bool) {
	for _, name := range strings.Split(key, ".") {
		v = deref(v)
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		var ok bool
		if v, ok = named(v, name); !ok {
			return reflect.Value{}, false
		}
	}
	v = deref(v)
	return v, v.Kind() == reflect.Slice
}

// deref follows pointers: an optional section that is absent is allocated
// when v can be set (a sweep setting one of its keys), else read as its
// zero value.
func deref(v reflect.Value) reflect.Value {
	for v.Kind() == reflect.Pointer {
		switch {
		case !v.IsNil():
			v = v.Elem()
		case v.CanSet():
			v.Set(reflect.New(v.Type().Elem()))
			v = v.Elem()
		default:
			v = reflect.New(v.Type().Elem()).Elem()
		}
	}
	return v
}

// absent reports whether key lies in an optional section the scenario
// does not have (machine.cpu.coherence without the block): its keys are
// not checked.
func absent(v reflect.Value, key string) bool {
	for _, name := range strings.Split(key, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return true
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return false
		}
		var ok bool
		if v, ok = named(v, name); !ok {
			return false
		}
	}
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// named is struct v's field of YAML key name, looking into the structs v
// inlines (`yaml:",inline"`).
func named(v reflect.Value, name string) (reflect.Value, bool) {
	for i := 0; i < v.NumField(); i++ {
		tag, opts, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if tag == "" && strings.Contains(opts, "inline") && v.Field(i).Kind() == reflect.Struct {
			if f, ok := named(v.Field(i), name); ok {
				return f, true
			}
			continue
		}
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}
