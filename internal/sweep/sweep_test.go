package sweep

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const small = `
grid:
  workload.dht.compute_cycles: [0, 2000]
  workload.dht.schemes: [[AA-SP, AM], [RMA]]
  workload.dht.inserts: [60]
plot:
  y: [inserts_per_second, target_polls]
`

// Every error of a sweep file is "file:line: dotted.key: what is wrong
// (what is allowed)", exactly; the grid's keys and values are grid.KEY and
// grid.KEY[i], and a point's error names the point.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"unknown top key", "grid: {seed: [1]}\nplots: {}\n", `sweep.yaml:2: plots: unknown key (did you mean "plot"?)`},
		{"unknown top key, far", "grid: {seed: [1]}\nmachine: {}\n", "sweep.yaml:2: machine: unknown key (the keys of a sweep: scenario, grid, plot, until, seeds)"},
		{"no grid", "plot: {y: [inserts_per_second]}\n", "sweep.yaml: grid: no keys to sweep (a section from scenario keys to lists of values)"},
		{"grid not a section", "grid: [1]\n", "sweep.yaml:1: grid: not a section (a section from scenario keys to lists of values)"},
		{"grid not a list", "grid:\n  seed: 3\n", "sweep.yaml:2: grid.seed: not a list of values (a non-empty list of the key's values)"},
		{"grid key twice", "grid:\n  seed: [1]\n  seed: [2]\n", "sweep.yaml:3: grid.seed: given twice (each key once)"},
		{"no such key", "grid:\n  machine.iommu.iotlb_wayz: [1]\n", `sweep.yaml:2: grid.machine.iommu.iotlb_wayz: unknown key (did you mean "machine.iommu.iotlb_ways"?)`},
		{"key in the wrong section", "grid:\n  machine.rate_mbps: [1]\n", `sweep.yaml:2: grid.machine.rate_mbps: unknown key (did you mean "machine.wire.rate_mbps" or "machine.startx.line.rate_mbps"?)`},
		{"key under a leaf", "grid:\n  seed.x: [1]\n", "sweep.yaml:2: grid.seed.x: seed is not a section (a key of a section)"},
		{"kind varies", "grid:\n  workload.kind: [dht, counter]\n", "sweep.yaml:2: grid.workload.kind: cannot vary (one sweep per workload: they measure different things)"},
		{"bad value", "grid:\n  machine.iommu.iotlb_eviction: [lru, fifo-ish]\n", `sweep.yaml:2: grid.machine.iommu.iotlb_eviction[1]: "fifo-ish" is not an eviction policy (lru, fifo or random)`},
		{"float in an integer key", "grid:\n  machine.nodes:\n    - 2\n    - 2.5\n", "sweep.yaml:4: grid.machine.nodes[1]: 2.5 is not a whole number (2..4096; two nodes share a direct link, more a switch, a leaf-spine network or a torus)"},
		{"negative in an unsigned key", "grid:\n  machine.wire.rate_mbps: [-1]\n", "sweep.yaml:2: grid.machine.wire.rate_mbps[0]: -1 is negative (1..1000000 Mb/s)"},
		{"bad scheme", "grid:\n  workload.dht.schemes: [[AM-Telepathy]]\n", `sweep.yaml:2: grid.workload.dht.schemes[0][0]: "AM-Telepathy" is not a DHT scheme (AA-Poll, AA-Int, AA-SP, RMA, AM, AM-Exp, AM-Onload, AM-Int)`},
		{"bad key in a section value", "grid:\n  machine.iommu: [{iotlb_wayz: 1}]\n", `sweep.yaml:2: grid.machine.iommu[0].iotlb_wayz: unknown key (did you mean "grid.machine.iommu[0].iotlb_ways"?)`},
		{"range in a section value", "grid:\n  machine.iommu: [{iotlb_sets: 65536, iotlb_ways: 4}]\n", "sweep.yaml:2: grid.machine.iommu[0].iotlb_ways: 65536 sets × 4 ways is 262144 entries (sets × ways at most 65536)"},
		{"a point", "grid:\n  machine.cores: [1, 2]\n  workload.dht.procs_per_node: [2]\n", "sweep.yaml:3: grid.workload.dht.procs_per_node[0]: at machine.cores=1 workload.dht.procs_per_node=2: 2 is more than machine.cores (0..1: up to machine.cores)"},
		{"a point too large", "grid:\n  machine.nodes: [64]\n  machine.cores: [64]\n  workload.dht.procs_per_node: [64]\n  workload.dht.inserts: [1000000]\n",
			"sweep.yaml:5: grid.workload.dht.inserts[0]: at machine.nodes=64 machine.cores=64 workload.dht.procs_per_node=64 workload.dht.inserts=1000000: the scenario needs about 5.25 TiB of memory, 5.13 TiB for the DHT's keys and the frames of their operations (at most max_memory_mib, 4096 MiB: make workload.dht.inserts or workload.dht.procs_per_node or machine.nodes smaller, or raise max_memory_mib)"},
		{"x not in grid", "grid:\n  seed: [1, 2]\nplot: {x: machine.nodes}\n", `sweep.yaml:3: plot.x: "machine.nodes" is not a grid key (a grid key: seed, collisions)`},
		{"x near a grid key", "grid:\n  machine.nodes: [2, 4]\nplot: {x: machine.node}\n", `sweep.yaml:3: plot.x: "machine.node" is not a grid key (did you mean "machine.nodes"? a grid key: machine.nodes, collisions)`},
		{"unknown metric", "grid:\n  seed: [1]\nplot: {y: [speed]}\n", `sweep.yaml:3: plot.y[0]: "speed" is not a metric (a metric of the dht workload: inserts_per_second, sim_time_us, remote_ops_per_insert, pcie_tlps_per_insert, wire_bytes_per_insert, target_polls, ops_per_second, nic_energy_uj, router_energy_uj, iotlb_hit_rate)`},
		{"unknown plot key", "grid:\n  seed: [1]\nplot: {z: 1}\n", `sweep.yaml:3: plot.z: unknown key (did you mean "plot.x"?)`},
		{"plot type", "grid:\n  seed: [1]\nplot:\n  log_x: often\n", `sweep.yaml:4: plot.log_x: "often" is not true or false (true or false)`},
		{"bad until", "until: soon\ngrid:\n  seed: [1]\n", `sweep.yaml:1: until: "soon" is not a time (a whole number with unit ps, ns, us, ms or s)`},
		{"until a list", "until: [1s]\ngrid:\n  seed: [1]\n", "sweep.yaml:1: until: not a single value (a time such as 10s)"},
		{"syntax", "grid:\n  seed: [1\n", "sweep.yaml:1: cannot be read as YAML: did not find expected ',' or ']'"},
		{"too many points", "grid:\n  seed: [" + strings.Repeat("1,", 999) + "1]\n  machine.nodes: [" + strings.Repeat("2,", 999) + "2]\n", "sweep.yaml:1: grid: more than 100000 points (at most 100000; split the sweep)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("sweep.yaml", []byte(tc.file), t.TempDir())
			if err == nil || err.Error() != tc.want {
				t.Fatalf("\n got %v\nwant %s", err, tc.want)
			}
		})
	}
	// A missing base scenario names the file; a bad one is its own
	// file's error; a point that breaks a key of the base scenario is
	// placed there.
	dir := t.TempDir()
	if _, err := Parse("sweep.yaml", []byte("scenario: nope.yaml\ngrid:\n  seed: [1]\n"), dir); err == nil ||
		err.Error() != "sweep.yaml:1: scenario: open "+filepath.Join(dir, "nope.yaml")+": no such file or directory (a scenario file, relative to the sweep file)" {
		t.Errorf("missing scenario: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "base.yaml"), []byte("machine:\n  cores: 4\nworkload:\n  dht:\n    procs_per_node: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("sweep.yaml", []byte("scenario: base.yaml\ngrid:\n  machine.cores: [4, 2]\n"), dir); err == nil ||
		err.Error() != filepath.Join(dir, "base.yaml")+":5: workload.dht.procs_per_node: at grid point machine.cores=2: 4 is more than machine.cores (0..2: up to machine.cores)" {
		t.Errorf("a base key: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("machine:\n  nodez: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("sweep.yaml", []byte("scenario: bad.yaml\ngrid:\n  seed: [1]\n"), dir); err == nil ||
		err.Error() != filepath.Join(dir, "bad.yaml")+`:2: machine.nodez: unknown key (did you mean "machine.nodes"?)` {
		t.Errorf("a bad base: %v", err)
	}
}

func TestPointsCrossProduct(t *testing.T) {
	s, err := Parse("s.yaml", []byte(small), ".")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, p := range s.Points() {
		got = append(got, strings.Join(p, "|"))
	}
	want := []string{"0|[AA-SP, AM]|60", "0|[RMA]|60", "2000|[AA-SP, AM]|60", "2000|[RMA]|60"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("points %q, want %q", got, want)
	}
	// A mapping value sets several keys of a section at once.
	z, err := Parse("z.yaml", []byte("grid:\n  machine.iommu: [{iotlb_sets: 64, iotlb_ways: 1}, {iotlb_sets: 1, iotlb_ways: 64}]\n  machine.nodes: [2, 4]\nplot: {x: machine.nodes}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	zs, err := z.scenarioAt(z.Points()[2])
	if err != nil {
		t.Fatal(err)
	}
	if m := zs.Machine; m.IOMMU.IOTLBSets != 1 || m.IOMMU.IOTLBWays != 64 || m.IOMMU.IOTLBEviction != "lru" || m.Nodes != 2 {
		t.Fatalf("merged point: %+v", m)
	}
	if _, err := Parse("z.yaml", []byte("grid:\n  machine.iommu: [{iotlb_wayz: 1}]\n"), "."); err == nil || err.Error() != `z.yaml:2: grid.machine.iommu[0].iotlb_wayz: unknown key (did you mean "grid.machine.iommu[0].iotlb_ways"?)` {
		t.Fatalf("bad key in a mapping value: %v", err)
	}
	sc, err := s.scenarioAt(s.Points()[2])
	if err != nil {
		t.Fatal(err)
	}
	if d := sc.Workload.DHT; d.ComputeCycles != 2000 || d.Inserts != 60 || strings.Join(d.Schemes, ",") != "AA-SP,AM" {
		t.Fatalf("point 2 scenario: %+v", d)
	}
}

// A sweep's outputs do not depend on how many workers ran it, and every
// experiment checked its own hashtable.
func TestRunDeterministicAcrossJobs(t *testing.T) {
	s, err := Parse("s.yaml", []byte(small), ".")
	if err != nil {
		t.Fatal(err)
	}
	var outs [2]string
	for i, jobs := range []int{1, 3} {
		n := 0
		rows, err := s.Run(jobs, func() { n++ })
		if err != nil {
			t.Fatal(err)
		}
		if n != 4 || len(rows) != 2*(2+1)*2 {
			t.Fatalf("jobs %d: %d callbacks, %d rows", jobs, n, len(rows))
		}
		for _, r := range rows {
			if !r.Result.Verified || r.Result.InsertsPerSec <= 0 {
				t.Fatalf("row %+v", r)
			}
		}
		var b bytes.Buffer
		if err := s.WriteCSV(&b, rows); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteJSON(&b, rows); err != nil {
			t.Fatal(err)
		}
		outs[i] = b.String()
	}
	if outs[0] != outs[1] {
		t.Fatalf("1 and 3 workers wrote different tables:\n%s\n---\n%s", outs[0], outs[1])
	}
	head := strings.SplitN(outs[0], "\n", 2)[0]
	if head != "workload.dht.compute_cycles,workload.dht.schemes,workload.dht.inserts,scheme,collisions,inserts_per_second,sim_time_us,remote_ops_per_insert,pcie_tlps_per_insert,wire_bytes_per_insert,target_polls,ops_per_second,nic_energy_uj,router_energy_uj,iotlb_hit_rate,verified" {
		t.Fatalf("CSV header %q", head)
	}
}

// The plots are real images with the data drawn in them: the PNG decodes
// and has many colours (lines, glyphs, text), the SVG parses as XML and has
// a path for each line.
func TestPlotsAreValidImages(t *testing.T) {
	s, err := Parse("s.yaml", []byte(small), ".")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Run(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	series, err := s.Series(rows, "inserts_per_second")
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 6 || len(series[0].X) != 2 || series[0].Name != "AA-SP, 5 % collisions, schemes = [AA-SP, AM]" {
		t.Fatalf("series %+v", series)
	}
	dir := t.TempDir()
	paths, err := s.SavePlots(rows, dir, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 4 {
		t.Fatalf("wrote %v", paths)
	}
	for _, p := range paths {
		switch filepath.Ext(p) {
		case ".png":
			checkPNG(t, p)
		case ".svg":
			checkSVG(t, p, len(series))
		}
	}
}

func checkPNG(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() < 400 || b.Dy() < 250 {
		t.Fatalf("%s: %v is too small", path, b)
	}
	colours := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colours) < 8 {
		t.Fatalf("%s: only %d colours: nothing drawn", path, len(colours))
	}
}

func checkSVG(t *testing.T, path string, lines int) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	paths, root := 0, ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "path" {
				paths++
			}
		}
	}
	if root != "svg" || paths < lines {
		t.Fatalf("%s: root <%s>, %d paths for %d lines", path, root, paths, lines)
	}
}

// Every sweep in examples/ parses, and every one of its points is a valid
// scenario (Parse checks them all before anything runs).
func TestExampleSweepsParse(t *testing.T) {
	files, err := filepath.Glob("../../examples/sweep-*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("example sweeps: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(f, data, filepath.Dir(f))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Points()) < 2 {
			t.Errorf("%s: %d points", f, len(s.Points()))
		}
	}
}

// A sweep file of any bytes parses or fails with an error; it never panics,
// and a parsed one has at least one point, each a valid scenario.
func FuzzParseSweep(f *testing.F) {
	f.Add([]byte(small))
	f.Add([]byte("grid:\n  machine.iommu: [{iotlb_sets: 1, iotlb_ways: 64}]\n"))
	f.Add([]byte("grid: {seed: []}\n"))
	f.Add([]byte("grid: {machine.nodes: [2]}\nseeds: [1, 2, 18446744073709551615]\n"))
	f.Add([]byte("plot: {x: collisions}\ngrid:\n  seed: [1, 2]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.yaml", data, t.TempDir())
		if err != nil {
			return
		}
		if len(s.Points()) == 0 {
			t.Fatal("a parsed sweep has no points")
		}
	})
}

// FuzzSweep: a sweep file of any bytes parses or fails with an error that
// names the file; it never panics, and a parsed one has at least one
// point, each a valid scenario within its memory limit.
func FuzzSweep(f *testing.F) {
	f.Add([]byte(small))
	f.Add([]byte("grid:\n  machine.iommu: [{iotlb_sets: 1, iotlb_ways: 64}]\n"))
	f.Add([]byte("grid: {seed: []}\n"))
	f.Add([]byte("plot: {x: collisions}\ngrid:\n  seed: [1, 2]\n"))
	f.Add([]byte("grid:\n  machine.cores: [1, 2]\n  workload.dht.procs_per_node: [0, 2]\nuntil: 1ms\n"))
	files, _ := filepath.Glob("../../examples/sweep-*.yaml")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.yaml", data, t.TempDir())
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") && !strings.HasPrefix(err.Error(), "/") {
				t.Fatalf("an error that names no file: %v", err)
			}
			return
		}
		pts := s.Points()
		if len(pts) == 0 {
			t.Fatal("a parsed sweep has no points")
		}
		for _, p := range pts {
			sc, err := s.scenarioAt(p)
			if err != nil {
				t.Fatalf("point %v: %v", p, err)
			}
			if total, _ := sc.MemoryEstimate(); total > sc.MaxMemoryMiB<<20 {
				t.Fatalf("point %v: %d bytes, over %d MiB", p, total, sc.MaxMemoryMiB)
			}
		}
	})
}

// A sweep over another workload: the grid varies machine keys and the
// workload's section, the rows carry that workload's results and its
// columns (no collisions), every row checked; keys and metrics that belong
// to the DHT, or a grid that changes the workload, are refused.
func TestWorkloadSweep(t *testing.T) {
	dir := t.TempDir()
	base := "machine: {nodes: 3, cores: 2, wire: {rate_mbps: 10000}}\nworkload:\n  kind: getlog\n  getlog: {gets: 10, words: 16}\n"
	if err := os.WriteFile(filepath.Join(dir, "getlog.yaml"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	file := "scenario: getlog.yaml\ngrid:\n  machine.nodes: [2, 3]\n  workload.getlog.procs_per_node: [1, 2]\nplot: {y: [rate, nic_energy_uj]}\n"
	s, err := Parse("sweep.yaml", []byte(file), dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Run(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4*3 {
		t.Fatalf("%d rows, want 4 points × 3 schemes", len(rows))
	}
	var b bytes.Buffer
	if err := s.WriteCSV(&b, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if lines[0] != "machine.nodes,workload.getlog.procs_per_node,scheme,rate,sim_time_us,nic_energy_uj,router_energy_uj,verified" || !strings.HasPrefix(lines[1], "2,1,No-FT,") {
		t.Fatalf("CSV:\n%s", b.String())
	}
	for _, r := range rows {
		if !r.Workload.Verified || r.Workload.Rate <= 0 || r.Workload.Unit != "gets/s" || r.Result.Scheme != "" {
			t.Fatalf("row %+v", r)
		}
	}
	series, err := s.Series(rows, "rate")
	if err != nil || len(series) != 6 || series[0].Name != "No-FT, processes per node = 1" || len(series[0].X) != 2 {
		t.Fatalf("series %+v, %v", series, err)
	}
	if m, _ := s.metricOf("rate", rows); m.label != "getlog rate" || m.unit != "gets/s" {
		t.Fatalf("rate metric %+v", m)
	}
	for _, bad := range []struct{ file, want string }{
		{"scenario: getlog.yaml\ngrid:\n  workload.kind: [getlog, counter]\n", "sweep.yaml:3: grid.workload.kind: cannot vary (one sweep per workload: they measure different things)"},
		{"scenario: getlog.yaml\ngrid:\n  seed: [1]\nplot: {y: [inserts_per_second]}\n", `sweep.yaml:4: plot.y[0]: "inserts_per_second" is not a metric (a metric of the getlog workload: rate, sim_time_us, nic_energy_uj, router_energy_uj)`},
		{"scenario: getlog.yaml\ngrid:\n  seed: [1]\nplot: {x: collisions}\n", `sweep.yaml:4: plot.x: "collisions" is not a grid key (a grid key: seed)`},
		{"scenario: getlog.yaml\ngrid:\n  workload.getlog.schemes: [[No-FT, AA-SP]]\n", `sweep.yaml:3: grid.workload.getlog.schemes[0][1]: "AA-SP" is not a scheme of the getlog workload (No-FT, AA-Poll, RMA)`},
	} {
		if _, err := Parse("sweep.yaml", []byte(bad.file), dir); err == nil || err.Error() != bad.want {
			t.Errorf("%q: %v, want %q", bad.file, err, bad.want)
		}
	}
}

// The seeds key: a list of distinct whole numbers, not with grid.seed.
func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"grid: {machine.nodes: [2]}\nseeds: 3\n", "sweep.yaml:2: seeds: not a list of seeds (a list of 1 to 1000 seeds)"},
		{"grid: {machine.nodes: [2]}\nseeds: []\n", "sweep.yaml:2: seeds: not a list of seeds (a list of 1 to 1000 seeds)"},
		{"grid: {machine.nodes: [2]}\nseeds: [1, x]\n", `sweep.yaml:2: seeds[1]: "x" is not a seed (a whole number from 0 to 2^64−1)`},
		{"grid: {machine.nodes: [2]}\nseeds: [1, -2]\n", `sweep.yaml:2: seeds[1]: "-2" is not a seed (a whole number from 0 to 2^64−1)`},
		{"grid: {machine.nodes: [2]}\nseeds: [4, 5, 4]\n", "sweep.yaml:2: seeds[2]: 4 given twice (each seed once)"},
		{"grid: {seed: [1, 2]}\nseeds: [4, 5]\n", "sweep.yaml:2: seeds: given with grid.seed (either: grid.seed makes each seed a point of its own, seeds a mean over them)"},
	} {
		if _, err := Parse("sweep.yaml", []byte(tc.file), "."); err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.file, err, tc.want)
		}
	}
	s, err := Parse("sweep.yaml", []byte("grid: {machine.nodes: [2, 3]}\nseeds: [7, 5]\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range s.Tasks() {
		got = append(got, fmt.Sprintf("%d:%s/%d", tk.Index, tk.Point[0], tk.Seed))
	}
	if strings.Join(got, " ") != "0:2/7 1:2/5 2:3/7 3:3/5" {
		t.Fatalf("tasks %v: want each point's seeds in the file's order", got)
	}
}

// Shares: i/n with 0 ≤ i < n; share i runs the tasks i, i+n, … .
func TestShards(t *testing.T) {
	for _, bad := range []string{"", "1", "2/2", "-1/2", "0/0", "a/b", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	s, err := Parse("sweep.yaml", []byte("grid: {machine.nodes: [2, 3, 4, 5, 6]}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for i := 0; i < 3; i++ {
		s.Shard, _ = ParseShard(fmt.Sprintf("%d/3", i))
		for _, tk := range s.shardTasks() {
			if tk.Index%3 != i {
				t.Errorf("share %d/3 has task %d", i, tk.Index)
			}
			seen[tk.Index]++
		}
	}
	if len(seen) != 5 {
		t.Fatalf("the shares cover tasks %v, want each of 0..4 once", seen)
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("task %d in %d shares", i, n)
		}
	}
}

// The mean and its 95 % Student-t interval: t(0.975, 2) = 4.302653 for
// three values one apart; nothing for a single value.
func TestMeanCI(t *testing.T) {
	for _, tc := range []struct {
		xs         []float64
		mean, half float64
	}{
		{[]float64{1, 2, 3}, 2, 4.302653 / math.Sqrt(3)},
		{[]float64{5}, 5, 0},
		{[]float64{4, 4, 4, 4}, 4, 0},
		{[]float64{0, 10}, 5, 12.706205 * 5 * math.Sqrt(2) / math.Sqrt(2)},
	} {
		m, h := MeanCI(tc.xs)
		if math.Abs(m-tc.mean) > 1e-9 || math.Abs(h-tc.half) > 1e-5*max(1, tc.half) {
			t.Errorf("MeanCI(%v) = %v ± %v, want %v ± %v", tc.xs, m, h, tc.mean, tc.half)
		}
	}
}

// A parts directory makes a sweep resumable: a task done with the same
// inputs is read back, not run (a part whose rows were changed by hand
// comes back changed); other inputs (a new time limit) run it again; and
// Collect names what is missing or failed.
func TestPartsResume(t *testing.T) {
	dir := t.TempDir()
	parse := func(until string) *Spec {
		s, err := Parse("sweep.yaml", []byte("grid: {machine.nodes: [2, 3], workload.dht.inserts: [10]}\nseeds: [1, 2]\nuntil: "+until+"\n"), ".")
		if err != nil {
			t.Fatal(err)
		}
		s.Parts = dir
		return s
	}
	s := parse("10s")
	rows, err := s.Run(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, ok, err := ReadPart(dir, 3)
	if err != nil || !ok || p.Manifest.Status != StatusDone || p.Manifest.Point != "machine.nodes=3 workload.dht.inserts=10" || p.Manifest.Seed != 2 || len(p.Rows) == 0 {
		t.Fatalf("part 3: %v %v %+v", ok, err, p.Manifest)
	}
	p.Rows[0].Result.InsertsPerSec = 12345
	if err := writePart(dir, p); err != nil {
		t.Fatal(err)
	}
	again, err := parse("10s").Run(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(rows) || again[len(rows)/2+len(rows)/4].Result.InsertsPerSec != 12345 {
		t.Fatalf("the done part was not reused")
	}
	fresh, err := parse("9s").Run(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range fresh {
		if r.Result.InsertsPerSec == 12345 {
			t.Fatal("a part made with another time limit was reused")
		}
	}
	if err := os.Remove(PartFile(dir, 1)); err != nil {
		t.Fatal(err)
	}
	if _, missing, err := parse("9s").Collect(dir); err != nil || len(missing) != 1 || !strings.Contains(missing[0], "task 1 (machine.nodes=2 workload.dht.inserts=10 seed=2): not run") {
		t.Fatalf("Collect: %v %v", missing, err)
	}
	if _, missing, _ := parse("8s").Collect(dir); len(missing) != 4 || !strings.Contains(missing[0], "run with other inputs") {
		t.Fatalf("Collect with other inputs: %v", missing)
	}
}
