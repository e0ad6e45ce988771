package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/testtool"
	"github.com/aaemu/aaemu/waveforms"
)

// longScenario runs long enough to be interrupted in its first (traced)
// experiment: RMA inserts with every signal traced.
const longScenario = `seed: 3
workload:
  dht:
    inserts: 20000
    cells: 65536
    collisions: [0.05]
    schemes: [RMA, AA-SP]
outputs:
  vcd: true
  trace: "node1.iommu,node1.nic0,net"
  trace_to: 0ns
  pcap: true
`

func writeTemp(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// SIGINT during the traced experiment of `aaemu run`: exit status 130, a
// VCD that the strict reader and GTKWave's vcd2fst read, ending at the time
// reached with a comment that says it is incomplete; a capture that tshark
// reads, whose last section's comment says so; stats.json with what was
// simulated and "complete": false.
func TestRunInterrupted(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	sc := writeTemp(t, dir, "long.yaml", longScenario)
	p := start(t, "run", sc, "--out", out, "--log-level", "info")
	p.waitLine(t, "running")
	pcap := filepath.Join(out, "run.pcapng")
	p.waitFor(t, "frames in run.pcapng", func() bool { return fileSize(pcap) > 64<<10 })
	if code := p.interrupt(t); code != 130 {
		t.Fatalf("exit status %d, want 130\n%s", code, p.errText())
	}
	if !strings.Contains(p.errText(), "interrupted") {
		t.Fatalf("stderr does not say it was interrupted:\n%s", p.errText())
	}
	if !strings.Contains(p.stdout.String(), "scheme  collisions") {
		t.Fatalf("no table on stdout:\n%s", p.stdout.String())
	}

	var st struct {
		Complete    *bool
		Interrupted bool
		Experiments []struct {
			Label      string
			Complete   bool
			Simulation struct {
				EndTimePS uint64 `json:"end_time_ps"`
			}
			Stats map[string]struct{ Value uint64 }
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("stats.json: %v", err)
	}
	if st.Complete == nil || *st.Complete || !st.Interrupted || len(st.Experiments) != 1 {
		t.Fatalf("stats.json: complete %v, interrupted %v, %d experiments", st.Complete, st.Interrupted, len(st.Experiments))
	}
	x := st.Experiments[0]
	end := x.Simulation.EndTimePS
	if x.Complete || end == 0 || x.Stats["node1.iommu.tlps"].Value == 0 {
		t.Fatalf("experiment %s: complete %v, end %d ps, %d TLPs at node 1", x.Label, x.Complete, end, x.Stats["node1.iommu.tlps"].Value)
	}

	vcdPath := filepath.Join(out, "run.vcd")
	data, err := os.ReadFile(vcdPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := waveforms.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("run.vcd: %v", err)
	}
	if v.End != end {
		t.Fatalf("run.vcd ends at %d ps, the run at %d", v.End, end)
	}
	if !bytes.Contains(data[bytes.LastIndex(data, []byte("\n#")):], []byte("$comment\n\tincomplete: ")) {
		t.Fatalf("run.vcd does not end with a comment that it is incomplete:\n%s", data[max(0, len(data)-300):])
	}
	vcd2fst := testtool.Need(t, "vcd2fst")
	if b, err := exec.Command(vcd2fst, vcdPath, filepath.Join(dir, "run.fst")).CombinedOutput(); err != nil {
		t.Fatalf("vcd2fst: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "run.gtkw")); err != nil {
		t.Fatal(err)
	}

	tshark := testtool.Need(t, "tshark")
	frames, err := exec.Command(tshark, testtool.TsharkArgs("-r", pcap, "-T", "fields", "-e", "frame.number")...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	if n := strings.Count(string(frames), "\n"); n < 100 {
		t.Fatalf("tshark reads %d frames", n)
	}
	capinfos := testtool.Need(t, "capinfos")
	info, err := exec.Command(capinfos, pcap).CombinedOutput()
	if err != nil {
		t.Fatalf("capinfos: %v\n%s", err, info)
	}
	if !strings.Contains(string(info), "incomplete: aaemu was interrupted") {
		t.Fatalf("capinfos shows no comment that the capture is incomplete:\n%s", info)
	}
}

// SIGINT during a sweep: the rows of the points that finished are in
// sweep.csv and sweep.json (which says "complete": false), exit status 130.
func TestSweepInterruptedKeepsRows(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	writeTemp(t, dir, "base.yaml", "seed: 3\nworkload:\n  dht:\n    cells: 65536\n    collisions: [0.05]\n    schemes: [RMA]\n")
	sw := writeTemp(t, dir, "sweep.yaml", "scenario: base.yaml\ngrid:\n  workload.dht.inserts: [100, 200, 20000, 20000, 20000]\nplot:\n  y: [inserts_per_second]\n")
	p := start(t, "sweep", sw, "--out", out, "-j", "1")
	csvPath := filepath.Join(out, "sweep.csv")
	lines := func() int {
		b, _ := os.ReadFile(csvPath)
		return bytes.Count(b, []byte("\n"))
	}
	p.waitFor(t, "two rows in sweep.csv", func() bool { return lines() >= 3 })
	if code := p.interrupt(t); code != 130 {
		t.Fatalf("exit status %d, want 130\n%s", code, p.errText())
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 3 || len(recs) > 5 || recs[1][0] != "100" || recs[2][0] != "200" {
		t.Fatalf("sweep.csv: %v", recs)
	}
	var js struct {
		Rows     []json.RawMessage
		Complete *bool
	}
	raw, _ := os.ReadFile(filepath.Join(out, "sweep.json"))
	if err := json.Unmarshal(raw, &js); err != nil {
		t.Fatalf("sweep.json: %v\n%s", err, raw)
	}
	if len(js.Rows) != len(recs)-1 || js.Complete == nil || *js.Complete {
		t.Fatalf("sweep.json: %d rows, complete %v; the CSV has %d", len(js.Rows), js.Complete, len(recs)-1)
	}
	if _, err := os.Stat(filepath.Join(out, "sweep-inserts_per_second.png")); err == nil {
		t.Fatal("an interrupted sweep drew plots of part of its grid")
	}
	if !strings.Contains(p.stdout.String(), "RMA") {
		t.Fatalf("no table of the finished rows:\n%s", p.stdout.String())
	}
}

// SIGINT during the second figure of `aaemu paper`: claims.md holds the
// first figure's claims and says the run is incomplete; the second
// figure's table keeps what finished.
func TestPaperInterruptedKeepsClaims(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "paper", "9a", "7c", "--out", dir, "-j", "1")
	claims := filepath.Join(dir, "claims.md")
	p.waitFor(t, "figure 9a's claims in claims.md", func() bool {
		b, _ := os.ReadFile(claims)
		return bytes.Contains(b, []byte("| 9a |"))
	})
	if code := p.interrupt(t); code != 130 {
		t.Fatalf("exit status %d, want 130\n%s", code, p.errText())
	}
	b, err := os.ReadFile(claims)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("| 9a | AA close to No-FT |")) || !bytes.Contains(b, []byte("Incomplete: interrupted during figure 7c")) {
		t.Fatalf("claims.md:\n%s", b)
	}
	if st, err := os.Stat(filepath.Join(dir, "fig9a", "points.csv")); err != nil || st.Size() == 0 {
		t.Fatalf("fig9a/points.csv: %v", err)
	}
	var js struct{ Complete *bool }
	raw, _ := os.ReadFile(filepath.Join(dir, "fig7c", "sweep.json"))
	if err := json.Unmarshal(raw, &js); err != nil || js.Complete == nil || *js.Complete {
		t.Fatalf("fig7c/sweep.json: %v, complete %v\n%s", err, js.Complete, raw)
	}
}
