package sweep

import (
	"testing"
)

// Keys and metrics are named in words with their units: from the table,
// a workload's shared keys from its "workload.*." entries, and keys the
// table does not know put into words.
func TestLabelOf(t *testing.T) {
	for _, c := range []struct {
		key         string
		words, unit string
	}{
		{"machine.wire.rate_mbps", "wire rate", "Mb/s"},
		{"machine.nodes", "nodes", ""},
		{"machine.iommu.iotlb_ways", "IOTLB ways", ""},
		{"workload.dht.compute_cycles", "compute between inserts", "cycles"},
		{"workload.dht.am_onload_cores", "AM-Onload server cores", ""},
		{"workload.stream.msg_bytes", "message size", "B"},
		{"workload.getlog.procs_per_node", "processes per node", ""},
		{"workload.sort.schemes", "schemes", ""},
		{"inserts_per_second", "inserts per second", ""},
		{"nic_energy_uj", "NICs' energy", "µJ"},
		{"wire_bytes_per_insert", "wire traffic per insert", "B"},
		{"collisions", "collision ratio", ""},
		// Not in the table: sections dropped, the unit off the name,
		// acronyms in capitals.
		{"machine.nic.qp_timeout_us", "NIC QP timeout", "µs"},
		{"workload.dht.am_batch_ns", "AM batch", "ns"},
		{"machine.pcie.max_tlp_bytes", "PCIe max TLP", "B"},
		{"workload.stream.window", "window", ""},
		{"machine.iommu.walk_cycles", "IOMMU walk", "cycles"},
		{"some_new_metric", "some new metric", ""},
		{"machine", "machine", ""},
		{"_ns", "ns", ""},
		{"workload.dht.inserts_per_s", "inserts per second", ""},
		{"machine.wire.warmup_s", "wire warmup", "s"},
	} {
		l := labelOf(c.key)
		if l.words != c.words || l.unit != c.unit {
			t.Errorf("labelOf(%q) = %q, %q; want %q, %q", c.key, l.words, l.unit, c.words, c.unit)
		}
	}
}

// Every metric a sweep can plot is in the table, so none is named by its
// CSV column.
func TestMetricsHaveLabels(t *testing.T) {
	for _, ms := range []map[string]metric{dhtMetrics, workloadMetrics} {
		for name := range ms {
			if _, ok := lookup(name); !ok && name != "rate" {
				t.Errorf("metric %s has no label", name)
			}
		}
	}
}

// A workload's rate is named by the unit its rows report.
func TestRateLabel(t *testing.T) {
	for _, c := range []struct {
		kind, unit  string
		words, want string
	}{
		{"getlog", "gets/s", "gets per second", ""},
		{"counter", "accesses/s", "accesses per second", ""},
		{"stream", "B/s", "stream rate", "B/s"},
		{"sort", "MB/s", "sort rate", "MB/s"},
		{"xor", "", "xor rate", ""},
		{"odd", "/s", "odd rate", "/s"},
	} {
		l := rateLabel(c.kind, c.unit)
		if l.words != c.words || l.unit != c.want {
			t.Errorf("rateLabel(%q, %q) = %q, %q; want %q, %q", c.kind, c.unit, l.words, l.unit, c.words, c.want)
		}
	}
}

// Titles carry their unit in brackets; brackets that hold no unit are
// part of the words.
func TestSplitUnitAndAxisTitle(t *testing.T) {
	for _, c := range []struct {
		title, words, unit string
	}{
		{"NIC energy (µJ)", "NIC energy", "µJ"},
		{"message size (B)", "message size", "B"},
		{"accesses per second (1/s)", "accesses per second", "1/s"},
		{"compute (cycles)", "compute", "cycles"},
		{"rate (AA-SP only)", "rate (AA-SP only)", ""},
		{"nodes", "nodes", ""},
		{"(µs)", "(µs)", ""},
		{"time (ms) of day", "time (ms) of day", ""},
	} {
		w, u := splitUnit(c.title)
		if w != c.words || u != c.unit {
			t.Errorf("splitUnit(%q) = %q, %q; want %q, %q", c.title, w, u, c.words, c.unit)
		}
	}
	for _, c := range []struct {
		words, unit, want string
	}{
		{"wire rate", "Gb/s", "wire rate (Gb/s)"},
		{"nodes", "", "nodes"},
		{"accesses per second", "1/s", "accesses per second"},
		{"access rate", "1/s", "access rate (1/s)"},
	} {
		if got := axisTitle(c.words, c.unit); got != c.want {
			t.Errorf("axisTitle(%q, %q) = %q, want %q", c.words, c.unit, got, c.want)
		}
	}
}

// A series is named by its grid values in words, each in its unit; a
// section's keys set together are named one by one.
func TestLegendPart(t *testing.T) {
	for _, c := range []struct {
		key, value, want string
	}{
		{"machine.wire.rate_mbps", "10000", "wire rate = 10 Gb/s"},
		{"machine.wire.rate_mbps", "1000", "wire rate = 1 Gb/s"},
		{"machine.wire.latency_ns", "1500", "wire latency = 1.5 µs"},
		{"machine.nodes", "4", "nodes = 4"},
		{"workload.dht.schemes", "[AA-SP, AM]", "schemes = [AA-SP, AM]"},
		{"workload.dht.compute_cycles", "2000", "compute between inserts = 2000 cycles"},
		{"workload.stream.msg_bytes", "65536", "message size = 64 KiB"},
		{"machine.iommu", "{iotlb_sets: 16, iotlb_ways: 4, iotlb_eviction: lru}",
			"IOTLB sets = 16, IOTLB ways = 4, IOTLB eviction = lru"},
		{"machine.iommu.iotlb_eviction", "random", "IOTLB eviction = random"},
		{"machine.nic.active_w", "not a number", "NIC power when sending = not a number W"},
		{"workload.dht.cells", "16384", "table cells = 16384"},
	} {
		if got := legendPart(c.key, c.value); got != c.want {
			t.Errorf("legendPart(%q, %q) = %q, want %q", c.key, c.value, got, c.want)
		}
	}
	for _, c := range []struct {
		c    float64
		want string
	}{{0.05, "5 % collisions"}, {0.125, "12.5 % collisions"}, {0, "0 % collisions"}, {0.35, "35 % collisions"}} {
		if got := collisionsPart(c.c); got != c.want {
			t.Errorf("collisionsPart(%v) = %q, want %q", c.c, got, c.want)
		}
	}
}

// Units take the prefix that suits the value, combined with the unit's
// own: 35000 µJ is 35 mJ, never 35k µJ. Sizes in bytes take binary
// prefixes when they are short multiples of one.
func TestFormatQuantity(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{35000, "µJ", "35 mJ"},
		{35, "µJ", "35 µJ"},
		{0.5, "µJ", "500 nJ"},
		{35e6, "µJ", "35 J"},
		{-35000, "µJ", "-35 mJ"},
		{35000, "uJ", "35 mJ"},
		{10000, "Mb/s", "10 Gb/s"},
		{100, "Mb/s", "100 Mb/s"},
		{1.2e8, "B/s", "120 MB/s"},
		{123456789, "B/s", "123.457 MB/s"},
		{1500, "MHz", "1.5 GHz"},
		{0.5, "ns", "500 ps"},
		{1e-3, "s", "1 ms"},
		{1000, "ms", "1 s"},
		{0.35, "nJ/B", "350 pJ/B"},
		{65536, "B", "64 KiB"},
		{1024, "B", "1 KiB"},
		{1536, "B", "1.5 KiB"},
		{3 << 20, "B", "3 MiB"},
		{64, "B", "64 B"},
		{1000, "B", "1 kB"},
		{1500, "B", "1.5 kB"},
		{1e6, "B", "1 MB"},
		{2, "KiB", "2 KiB"},
		{999.9999999, "µs", "1 ms"},
		{0, "µJ", "0 µJ"},
		{2000, "cycles", "2000 cycles"},
		{2.5e6, "", "2500000"},
		{0.05, "", "0.05"},
		{3, "ppm", "3 ppm"},
		{2, "Kib", "2 Kib"}, // not a unit aaemu knows: as written
	} {
		if got := formatQuantity(c.v, c.unit); got != c.want {
			t.Errorf("formatQuantity(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}

// An axis takes one prefix, from its largest value.
func TestScaleFor(t *testing.T) {
	for _, c := range []struct {
		unit string
		vs   []float64
		div  float64
		want string
	}{
		{"µJ", []float64{0, 10000, 20000, 30000}, 1000, "mJ"},
		{"µJ", []float64{0, 200, 400}, 1, "µJ"},
		{"B/s", []float64{2e7, 6e7, 1e8}, 1e6, "MB/s"},
		{"B", []float64{0, 16384, 32768, 49152, 65536}, 1024, "KiB"},
		{"B", []float64{0, 20000, 40000, 60000}, 1000, "kB"},
		{"B", []float64{0, 1e6, 2e6}, 1e6, "MB"},
		{"Mb/s", []float64{1000, 10000, 40000}, 1000, "Gb/s"},
		{"ns", []float64{0, 0.5}, 1e-3, "ps"},
		{"cycles", []float64{0, 8000}, 1, "cycles"},
		{"", []float64{0, 2e6}, 1, ""},
		{"µJ", nil, 1, "µJ"},
		{"µJ", []float64{0}, 1, "µJ"},
	} {
		sc := scaleFor(parseUnit(c.unit), c.vs)
		if sc.unit != c.want || !near(sc.div, c.div, 1e-12) {
			t.Errorf("scaleFor(%q, %v) = ÷%v %q, want ÷%v %q", c.unit, c.vs, sc.div, sc.unit, c.div, c.want)
		}
	}
}

// Numbers of things take k, M, G; numbers drop rounding noise.
func TestNumbers(t *testing.T) {
	for _, c := range []struct {
		x           float64
		count, want string
	}{
		{2.5e6, "2.5M", "2500000"},
		{16384, "16.384k", "16384"},
		{999, "999", "999"},
		{999999.9, "1M", "1000000"},
		{0.1 + 0.2, "0.3", "0.3"},
		{0.05, "0.05", "0.05"},
		{-2000, "-2k", "-2000"},
		{3e9, "3G", "3000000000"},
		{2.7e-17, "0", "0"},
		{0, "0", "0"},
	} {
		if got := count(c.x); got != c.count {
			t.Errorf("count(%v) = %q, want %q", c.x, got, c.count)
		}
		if got := number(c.x); got != c.want {
			t.Errorf("number(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}
