package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/waveforms"
)

// `aaemu run` on a torus: the DHT's schemes run on 12 nodes of a 3×2×2
// Gemini-class torus and check their tables; every frame a node's adapter
// took from its NIC came out of an adapter to a NIC, none broken or
// dropped; the waveforms (a router's among them) and the capture are
// written (the VCD names the router node[3] node_3).
func TestRunTorus(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "run", "../../examples/dht-torus.yaml", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"AA-Poll", "AM", "RMA", "run.pcapng"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	var stats struct {
		Complete bool
		Results  []struct {
			Scheme   string
			Verified bool
		}
		Experiments []struct {
			Label string
			Stats map[string]struct{ Value uint64 }
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &stats); err != nil {
		t.Fatal(err)
	}
	if !stats.Complete || len(stats.Results) != 3 {
		t.Fatalf("complete %v, %d results", stats.Complete, len(stats.Results))
	}
	for _, r := range stats.Results {
		if !r.Verified {
			t.Fatalf("%s: the table is wrong", r.Scheme)
		}
	}
	for _, x := range stats.Experiments {
		sum := map[string]uint64{}
		for name, v := range x.Stats {
			if i := strings.Index(name, ".adapter."); i >= 0 {
				sum[name[i+len(".adapter."):]] += v.Value
			}
		}
		if sum["frames_in"] == 0 || sum["frames_in"] != sum["frames_out"] || sum["broken"] != 0 || sum["dropped"] != 0 {
			t.Fatalf("%s: adapters took %d frames, gave %d, %d broken packets, %d dropped", x.Label, sum["frames_in"], sum["frames_out"], sum["broken"], sum["dropped"])
		}
		if sum["packets"] < sum["frames_in"] {
			t.Fatalf("%s: %d packets for %d frames", x.Label, sum["packets"], sum["frames_in"])
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "run.vcd"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := waveforms.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []string{"net.up3.bth_opcode", "net.torus.node_3.router.xp.vc"} {
		if _, ok := v.ByPath(sig); !ok {
			t.Errorf("%s is not traced", sig)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "run.pcapng")); err != nil || fi.Size() == 0 {
		t.Fatalf("no capture: %v", err)
	}
}

// `aaemu paper --machine gemini` runs the figures at scale on the
// Gemini-class preset: the title names the machine and its logs, the
// points come from a torus (the adapters' figure is in no table, but the
// rates differ from the built-in star's), and a preset that is not one is
// refused before anything runs.
func TestPaperOnGemini(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "9a", "--machine", "gemini", "--max-nodes", "2", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "32 processes per node (P = 64 to 64) getting from random other nodes, on gemini.yaml (a torus of 4 B/cycle links at 1000 MHz, 100-cycle hops)") {
		t.Fatalf("9a on gemini:\n%s", out)
	}
	gem, err := os.ReadFile(filepath.Join(dir, "fig9a", "points.csv"))
	if err != nil {
		t.Fatal(err)
	}
	star := t.TempDir()
	if out, err := aaemu(t, "paper", "9a", "--max-nodes", "2", "--out", star); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ref, _ := os.ReadFile(filepath.Join(star, "fig9a", "points.csv"))
	if bytes.Equal(gem, ref) || !strings.Contains(string(gem), "\n2,AA-Poll,") {
		t.Fatalf("the same points on gemini as on the star:\n%s", gem)
	}
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("machine: {nodes: 4, cores: 4}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, want string }{
		{"9a --machine nosuch.yaml", "--machine: open nosuch.yaml"},
		{"9a --machine " + small, "small.yaml: machine.cores: 4, the figures at scale run 32 processes a node"},
		{"6c --machine gemini", "--max-nodes: figure 6c has no machine-size axis"},
		{"7a --machine gem5", "--machine gem5.yaml: figure 7a does not run on a two-node machine"},
		{"6c --machine gem5 --max-nodes 4", "--max-nodes: gem5.yaml is a two-node machine"},
		{"am2 --machine gem5", "a two-node machine runs the Active Access paper's 6a–6c"},
	} {
		if out, err := aaemu(t, append(strings.Fields("paper "+tc.args), "--out", dir)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("paper %s: %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

// `aaemu paper 6c --machine gem5` runs the two-node DHT on the paper's gem5
// set-up: the title names the machine and its PCIe link, and the points
// differ from the built-in machine's (a PCIe Gen1 x1 link, no wire delay),
// an AA insert taking 12 TLPs there (its put and its ACK each with a
// descriptor read and write-back on both sides: the e1000's descriptors)
// against 4 on the built-in NIC.
func TestPaperOnGem5(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "6c", "--machine", "gem5", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "on gem5.yaml (1000 Mb/s wire, PCIe Gen1 x1, CPU at 2000 MHz)") {
		t.Fatalf("6c on gem5:\n%s", out)
	}
	gem, err := os.ReadFile(filepath.Join(dir, "fig6c", "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	ref := t.TempDir()
	if out, err := aaemu(t, "paper", "6c", "--out", ref); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	def, _ := os.ReadFile(filepath.Join(ref, "fig6c", "sweep.csv"))
	if bytes.Equal(gem, def) || !strings.Contains(string(gem), ",RMA,0.5,") {
		t.Fatalf("the same points on gem5 as on the built-in machine:\n%s", gem)
	}
	// scheme, collisions, inserts/s, sim time, remote ops, TLPs an insert.
	tlps := func(csv []byte) string {
		for _, line := range strings.Split(string(csv), "\n") {
			if f := strings.Split(line, ","); strings.Contains(line, ",AA-SP,0.05,") && len(f) > 5 {
				return f[len(f)-8]
			}
		}
		return ""
	}
	if g, d := tlps(gem), tlps(def); g != "12.012" || d != "4.004" {
		t.Errorf("AA-SP's PCIe TLPs an insert: %q on gem5, %q on the built-in machine; want 12.012 and 4.004", g, d)
	}
}

// 6c on the gem5 preset with the e1000's software path: both schemes pay
// the driver's path, so each is slower than on the gem5 preset, and the
// claims table is printed with its tolerances.
func TestPaperOnGem5E1000(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "6c", "--machine", "gem5-e1000", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "on gem5-e1000.yaml (1000 Mb/s wire") || !strings.Contains(out, "2×–4.5× at every collision ratio") {
		t.Fatalf("6c on gem5-e1000:\n%s", out)
	}
	ref := t.TempDir()
	if out, err := aaemu(t, "paper", "6c", "--machine", "gem5", "--out", ref); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rate := func(d, scheme string) float64 {
		f, err := os.Open(filepath.Join(d, "fig6c", "sweep.csv"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil || len(rows) < 2 {
			t.Fatalf("%s: %v", d, err)
		}
		sc, co, ra := slices.Index(rows[0], "scheme"), slices.Index(rows[0], "collisions"), slices.Index(rows[0], "inserts_per_second")
		for _, r := range rows[1:] {
			if r[sc] == scheme && r[co] == "0.05" {
				v, _ := strconv.ParseFloat(r[ra], 64)
				return v
			}
		}
		t.Fatalf("%s: no %s point at 5 %%", d, scheme)
		return 0
	}
	for _, s := range []string{"AA-SP", "RMA"} {
		if e, g := rate(dir, s), rate(ref, s); e <= 0 || e >= g {
			t.Errorf("%s at 5 %%: %.0f inserts/s with the software path, %.0f without: want slower", s, e, g)
		}
	}
}
