package sweep

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// A label is how plots name a quantity: in words, and the unit its values
// are in ("" for a number of things or a ratio).
type label struct {
	words, unit string
}

// labels names the scenario keys a sweep may vary and the metrics it may
// plot. A workload's own keys are under "workload.*." (every workload's
// section); a key not here is put into words by keyWords.
var labels = map[string]label{
	"seed": {"seed", ""},

	"machine.nodes":                      {"nodes", ""},
	"machine.cores":                      {"cores per node", ""},
	"machine.fabric_mhz":                 {"fabric clock", "MHz"},
	"machine.wire":                       {"wire", ""},
	"machine.wire.rate_mbps":             {"wire rate", "Mb/s"},
	"machine.wire.latency_ns":            {"wire latency", "ns"},
	"machine.wire.loss_ppm":              {"wire loss", "ppm"},
	"machine.pcie":                       {"PCIe", ""},
	"machine.pcie.gen":                   {"PCIe generation", ""},
	"machine.pcie.width":                 {"PCIe lanes", ""},
	"machine.pcie.latency_ns":            {"PCIe latency", "ns"},
	"machine.nic":                        {"NIC", ""},
	"machine.nic.pmtu":                   {"path MTU", "B"},
	"machine.nic.offload":                {"NIC offload", ""},
	"machine.nic.interrupt_rate":         {"NIC interrupt throttle", "interrupts/s"},
	"machine.nic.driver_rx_cycles":       {"driver work a packet received", "cycles"},
	"machine.nic.driver_tx_cycles":       {"driver work a packet sent", "cycles"},
	"machine.nic.retransmit_us":          {"retransmission timeout", "µs"},
	"machine.nic.active_w":               {"NIC power when sending", "W"},
	"machine.nic.idle_w":                 {"NIC power when idle", "W"},
	"machine.network":                    {"network", ""},
	"machine.network.topology":           {"topology", ""},
	"machine.network.nodes_per_leaf":     {"nodes per leaf switch", ""},
	"machine.network.spines":             {"spine switches", ""},
	"machine.network.switch_latency_ns":  {"switch latency", "ns"},
	"machine.network.router_nj_per_byte": {"router energy per byte", "nJ/B"},
	"machine.iommu":                      {"IOMMU", ""},
	"machine.iommu.iotlb_sets":           {"IOTLB sets", ""},
	"machine.iommu.iotlb_ways":           {"IOTLB ways", ""},
	"machine.iommu.iotlb_entries":        {"IOTLB entries", ""},
	"machine.iommu.iotlb_eviction":       {"IOTLB eviction", ""},
	"machine.iommu.iotlb_by_kind":        {"IOTLB lookups counted by kind of page", ""},
	"machine.iommu.iotlb_only":           {"only this kind of page in the IOTLB", ""},
	"machine.iommu.log_cam_entries":      {"log CAM entries", ""},
	"machine.iommu.flush_buffer_entries": {"flush buffer entries", ""},
	"machine.iommu.process_ns":           {"IOMMU processing time", "ns"},
	"machine.iommu.mem_access_ns":        {"IOMMU memory access time", "ns"},
	"machine.iommu.mode":                 {"IOMMU", ""},
	"machine.cpu":                        {"CPU", ""},
	"machine.cpu.interrupt_ns":           {"interrupt cost", "ns"},
	"machine.cpu.scratchpad_ns":          {"scratchpad access time", "ns"},
	"machine.cpu.polling_hyperthreads":   {"polling hyperthreads", ""},

	"workload.kind":                  {"workload", ""},
	"workload.*.schemes":             {"schemes", ""},
	"workload.*.procs_per_node":      {"processes per node", ""},
	"workload.dht":                   {"DHT", ""},
	"workload.dht.inserts":           {"inserts per process", ""},
	"workload.dht.cells":             {"table cells", ""},
	"workload.dht.collisions":        {"collision ratios", ""},
	"workload.dht.compute_cycles":    {"compute between inserts", "cycles"},
	"workload.dht.am_poll_ns":        {"AM polling interval", "ns"},
	"workload.dht.am_onload_cores":   {"AM-Onload server cores", ""},
	"workload.dht.lookups":           {"share of keys looked up", ""},
	"workload.dht.deletes":           {"share of keys deleted", ""},
	"workload.dht.log_bytes":         {"access log size", "B"},
	"workload.dht.aa_int_records":    {"AA-Int records per interrupt", ""},
	"workload.dht.aa_logs":           {"access logs", ""},
	"workload.dht.am_int_moderation": {"AM-Int messages per interrupt", ""},
	"workload.dht.am_int_period_ns":  {"AM-Int longest wait for an interrupt", "ns"},
	"workload.dht.page_zipf":         {"Zipf exponent of the keys' pages", ""},
	"workload.counter.elements":      {"counters", ""},
	"workload.counter.accesses":      {"accesses per process", ""},
	"workload.getlog.gets":           {"gets per process", ""},
	"workload.getlog.words":          {"words per get", ""},
	"workload.checkpoint.pages":      {"pages", ""},
	"workload.checkpoint.epochs":     {"epochs", ""},
	"workload.checkpoint.puts":       {"puts per epoch", ""},
	"workload.xor.words":             {"words", ""},
	"workload.stream.op":             {"operation", ""},
	"workload.stream.msg_bytes":      {"message size", "B"},
	"workload.stream.messages":       {"messages", ""},
	"workload.stream.outstanding":    {"messages in flight", ""},
	"workload.sort.keys":             {"keys per process", ""},

	// The metrics (see dhtMetrics and workloadMetrics); a workload's
	// "rate" is named by rateLabel, from the unit its rows report.
	CollisionsX:             {"collision ratio", ""},
	"inserts_per_second":    {"inserts per second", ""},
	"ops_per_second":        {"DHT operations per second", ""},
	"sim_time_us":           {"simulated time", "µs"},
	"remote_ops_per_insert": {"remote operations per insert", ""},
	"pcie_tlps_per_insert":  {"PCIe TLPs per insert", ""},
	"wire_bytes_per_insert": {"wire traffic per insert", "B"},
	"target_polls":          {"target receive-queue polls", ""},
	"nic_energy_uj":         {"NICs' energy", "µJ"},
	"router_energy_uj":      {"switches' energy", "µJ"},
	"iotlb_hit_rate":        {"IOTLB hit rate", ""},
}

// labelOf is the key's label: from the table, else its words and the unit
// its name ends in.
func labelOf(key string) label {
	if l, ok := lookup(key); ok {
		return l
	}
	return keyWords(key)
}

// lookup finds a key in the table.
func lookup(key string) (label, bool) {
	if l, ok := labels[key]; ok {
		return l, true
	}
	if p := strings.Split(key, "."); len(p) == 3 && p[0] == "workload" {
		l, ok := labels["workload.*."+p[2]]
		return l, ok
	}
	return label{}, false
}

// unitSuffixes are the units scenario keys' names end in.
var unitSuffixes = []struct{ suffix, unit string }{
	{"_ns", "ns"}, {"_us", "µs"}, {"_ps", "ps"}, {"_ms", "ms"}, {"_s", "s"},
	{"_mhz", "MHz"}, {"_ghz", "GHz"}, {"_mbps", "Mb/s"}, {"_gbps", "Gb/s"},
	{"_uj", "µJ"}, {"_nj", "nJ"}, {"_j", "J"}, {"_w", "W"},
	{"_bytes", "B"}, {"_cycles", "cycles"}, {"_ppm", "ppm"},
}

// acronyms are written in capitals (or as their names are spelt).
var acronyms = map[string]string{
	"aa": "AA", "am": "AM", "cam": "CAM", "cpu": "CPU", "dht": "DHT", "dma": "DMA",
	"iommu": "IOMMU", "iotlb": "IOTLB", "msi": "MSI", "mtu": "MTU", "pmtu": "path MTU",
	"nic": "NIC", "nics": "NICs", "pcie": "PCIe", "qp": "QP", "rma": "RMA", "tlp": "TLP",
	"tlps": "TLPs", "procs": "processes", "proc": "process", "ops": "operations",
}

// sections are the scenario's top levels and workloads' names: not words
// of a label (machine.wire.latency_ns is "wire latency").
var sections = map[string]bool{
	"machine": true, "workload": true, "dht": true, "counter": true, "getlog": true,
	"checkpoint": true, "xor": true, "stream": true, "sort": true,
}

// keyWords puts a key the table does not know into words: the unit its
// name ends in taken off, sections dropped, underscores as spaces and
// acronyms in capitals: workload.dht.am_poll_ns is "AM poll" in ns,
// inserts_per_s "inserts per second".
func keyWords(key string) label {
	var l label
	if k, ok := strings.CutSuffix(key, "_per_s"); ok { // a rate, not seconds
		key = k + "_per_second"
	}
	for _, u := range unitSuffixes {
		if strings.HasSuffix(key, u.suffix) && len(key) > len(u.suffix) {
			key, l.unit = strings.TrimSuffix(key, u.suffix), u.unit
			break
		}
	}
	var words []string
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if sections[p] && i < len(parts)-1 {
			continue
		}
		for _, w := range strings.FieldsFunc(p, func(r rune) bool { return r == '_' || r == '-' || r == ' ' }) {
			if a, ok := acronyms[strings.ToLower(w)]; ok {
				w = a
			}
			words = append(words, w)
		}
	}
	l.words = strings.Join(words, " ")
	if l.words == "" {
		l.words = key
	}
	return l
}

// rateLabel names a workload's rate in the unit its rows report: gets/s
// is "gets per second"; a unit that takes a prefix (B/s) stays one.
func rateLabel(kind, unit string) label {
	if w, ok := strings.CutSuffix(unit, "/s"); ok && w != "" && parseUnit(unit).base == "" && !strings.ContainsAny(w, " /") {
		return label{w + " per second", ""}
	}
	return label{kind + " rate", unit}
}

// axisTitle is a label as an axis's title: its words and, in brackets, the
// unit ("wire rate (Gb/s)"). A rate in 1/s whose words say "per second"
// needs no unit.
func axisTitle(words, unit string) string {
	if unit == "" || unit == "1/s" && strings.Contains(words, "per second") {
		return words
	}
	return words + " (" + unit + ")"
}

// splitUnit takes the unit off a title that ends in one in brackets:
// "NIC energy (µJ)" is "NIC energy" and "µJ". Brackets that hold no unit
// ("(AA-SP only)") stay.
func splitUnit(title string) (words, unit string) {
	i := strings.LastIndex(title, " (")
	if i < 0 || !strings.HasSuffix(title, ")") {
		return title, ""
	}
	u := title[i+2 : len(title)-1]
	if parseUnit(u).base == "" && !knownUnits[u] {
		return title, ""
	}
	return title[:i], u
}

// knownUnits are units that take no prefix but still read as units in a
// title's brackets.
var knownUnits = map[string]bool{"1/s": true, "cycles": true, "ppm": true, "%": true}

// legendPart names a grid key's value in a legend: "wire rate = 10 Gb/s",
// "schemes = [AA-SP, AM]"; a section's keys set together
// ({iotlb_sets: 16, iotlb_ways: 4}) are each named in turn.
func legendPart(key, value string) string {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(value), &n); err == nil && len(n.Content) == 1 && n.Content[0].Kind == yaml.MappingNode {
		m := n.Content[0]
		var parts []string
		for i := 0; i+1 < len(m.Content); i += 2 {
			parts = append(parts, legendPart(key+"."+m.Content[i].Value, flow(m.Content[i+1])))
		}
		return strings.Join(parts, ", ")
	}
	l := labelOf(key)
	return l.words + " = " + valueWords(value, l.unit)
}

// valueWords writes a grid value in its unit: 10000 Mb/s is "10 Gb/s".
func valueWords(value, unit string) string {
	if unit == "" {
		return value
	}
	var v float64
	if err := yaml.Unmarshal([]byte(value), &v); err != nil {
		return value + " " + unit
	}
	return formatQuantity(v, unit)
}

// collisionsPart names a DHT series' collision ratio in a legend.
func collisionsPart(c float64) string {
	return number(100*c) + " % collisions"
}
