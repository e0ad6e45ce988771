package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
