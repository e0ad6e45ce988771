package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `aaemu sweep` on the example writes the table, JSON and a PNG and SVG per
// metric, and prints one row per experiment; a rerun is byte-identical.
func TestSweepCommand(t *testing.T) {
	var runs [2]string
	for i := range runs {
		dir := t.TempDir()
		out, err := aaemu(t, "sweep", "../../examples/sweep-compute.yaml", "--out", dir, "-j", "2")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(out, "(5 points, 20 experiments") || !strings.Contains(out, "AM-Exp") {
			t.Fatalf("output:\n%s", out)
		}
		for _, f := range []string{"sweep.json", "sweep-inserts_per_second.png", "sweep-inserts_per_second.svg", "sweep-target_polls.png", "sweep-target_polls.svg"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
				t.Fatalf("%s: %v", f, err)
			}
		}
		csv, err := os.ReadFile(filepath.Join(dir, "sweep.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(csv), "\n"); n != 21 {
			t.Fatalf("sweep.csv has %d lines, want a header and 20 rows", n)
		}
		runs[i] = string(csv)
		for _, f := range []string{"sweep.json", "sweep-inserts_per_second.png", "sweep-target_polls.svg"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			runs[i] += string(b)
		}
	}
	if runs[0] != runs[1] {
		t.Fatal("two sweeps of the same file wrote different tables or plots")
	}
}

// `aaemu paper 6c` runs the figure, writes its table, plots and claims, and
// prints each claim with the paper's value, aaemu's and a verdict.
func TestPaperCommand(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "6c", "9a", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure 6c", "AA vs RMA on the two-node DHT", "≈3×", "both slow down as collisions rise", "Figure 9a", "AA close to No-FT"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"fig6c/sweep.csv", "fig6c/fig6c-inserts_per_second.png", "fig6c/fig6c-inserts_per_second.svg", "fig9a/points.csv", "fig9a/fig9a.png", "fig9a/fig9a.svg", "claims.md"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 100 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if csv, err := os.ReadFile(filepath.Join(dir, "fig9a", "points.csv")); err != nil || !strings.HasPrefix(string(csv), "nodes,scheme,gets_per_second\n") {
		t.Fatalf("fig9a/points.csv: %v\n%s", err, csv)
	}
	if _, err := aaemu(t, "paper", "12", "--out", dir); err == nil {
		t.Fatal("figure 12 ran, but the paper has none aaemu models")
	}
}

// `aaemu paper --max-nodes N` runs the figures whose axis is the machine's
// size on 2 … N nodes × 32 processes over srd: the table's node axis, its
// transport and the title's P say so; a figure without that axis, or a size
// out of range, is refused before anything runs.
func TestPaperAtScale(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "9a", "--max-nodes", "4", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "32 processes per node (P = 64 to 128), srd transport") || !strings.Contains(out, "4 nodes") || strings.Contains(out, "8 nodes") {
		t.Fatalf("9a at scale:\n%s", out)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "fig9a", "points.csv"))
	if err != nil || !strings.Contains(string(csv), "\n2,No-FT,") || !strings.Contains(string(csv), "\n4,RMA,") || strings.Contains(string(csv), "\n8,") {
		t.Fatalf("fig9a/points.csv: %v\n%s", err, csv)
	}
	for _, tc := range []struct{ args, want string }{
		{"6c --max-nodes 16", "--max-nodes: figure 6c has no machine-size axis (it applies to 7a, 7b, 7d, 9a)"},
		{"7a --max-nodes 1", "--max-nodes 1: want 2..4096 nodes"},
		{"7a --max-nodes 5000", "--max-nodes 5000: want 2..4096 nodes"},
	} {
		if out, err := aaemu(t, append(strings.Fields("paper "+tc.args), "--out", dir)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("paper %s: %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

// `aaemu paper 8b` runs the sort on 8 nodes under every scheme and writes
// the routers' energy per topology as bars, with its claim; power figures
// that make no sense are refused.
func TestPaperSortFigure(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "8b", "--out", dir, "-j", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure 8b", "AA's router energy the lowest in every topology", "over 7 topologies"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "fig8b", "points.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(csv), "\n"); lines != 1+7*4 || !strings.HasPrefix(string(csv), "nodes,topology,scheme,router_energy\n8,Torus3D,No-FT,") {
		t.Fatalf("points.csv (%d lines):\n%s", lines, csv)
	}
	for _, f := range []string{"fig8b/fig8b.png", "fig8b/fig8b.svg", "claims.md"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 100 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	bad := filepath.Join(dir, "power.yaml")
	if err := os.WriteFile(bad, []byte("machine:\n  nic: {active_w: 1, idle_w: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := aaemu(t, "paper", "8a", "--scenario", bad, "--out", dir); err == nil || !strings.Contains(out+err.Error(), "power.yaml:2: machine.nic.active_w") {
		t.Fatalf("an idle power above the active one was taken: %v\n%s", err, out)
	}
}

// `aaemu paper 6a` plots the streaming bandwidth against the message size
// and prints the no-iommu vs e-iommu gap at every size; the node-count
// figures keep their CSV.
func TestPaperStreamFigure(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "6a", "--out", dir, "-j", "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure 6a", "no-iommu vs e-iommu 1–5 % apart, 1 write in flight", "64B +", "64K +", "no-iommu marginally faster"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "fig6a", "points.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if lines[0] != "message_size,scheme,payload_bandwidth" || len(lines) != 1+6*4 || !strings.HasPrefix(lines[1], `64,"no-iommu, 1 in flight",`) {
		t.Fatalf("points.csv:\n%s", csv)
	}
	for _, f := range []string{"fig6a/fig6a.png", "fig6a/fig6a.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 100 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// A sweep with seeds run in three shares and merged writes what the local
// executor writes, byte for byte (tables, the summary with its confidence
// intervals, plots with error bars); a merge with a share missing lists
// its tasks and says the tables are incomplete; a rerun reuses the parts.
func TestSweepShardsMerge(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(file, []byte("grid:\n  machine.nodes: [2, 3]\n  workload.dht.inserts: [10]\nseeds: [1, 2]\nplot:\n  y: [inserts_per_second]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	local, shared := filepath.Join(dir, "local"), filepath.Join(dir, "shared")
	out, err := aaemu(t, "sweep", file, "--out", local, "-j", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, i := range []string{"0/3", "2/3"} {
		if out, err := aaemu(t, "sweep", file, "--shard", i, "--out", shared, "-j", "1"); err != nil {
			t.Fatalf("share %s: %v\n%s", i, err, out)
		}
	}
	out, err = aaemu(t, "sweep", "merge", shared)
	if err == nil || !strings.Contains(err.Error(), "task 1 (machine.nodes=2 workload.dht.inserts=10 seed=2): not run") || strings.Contains(err.Error(), "task 0 ") {
		t.Fatalf("merge without share 1/3: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(shared, "sweep.json")); !bytes.Contains(b, []byte(`"complete": false`)) {
		t.Fatal("an incomplete merge's sweep.json does not say so")
	}
	if out, err := aaemu(t, "sweep", file, "--shard", "1/3", "--out", shared, "-j", "1"); err != nil {
		t.Fatalf("share 1/3: %v\n%s", err, out)
	}
	if out, err := aaemu(t, "sweep", "merge", shared); err != nil || !strings.Contains(out, "(4 of 4 tasks merged)") {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	for _, f := range []string{"sweep.csv", "sweep.json", "sweep-summary.csv", "sweep-inserts_per_second.png", "sweep-inserts_per_second.svg"} {
		a, err1 := os.ReadFile(filepath.Join(local, f))
		b, err2 := os.ReadFile(filepath.Join(shared, f))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the merged shares differ from the local run (%v, %v)", f, err1, err2)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(local, "sweep-summary.csv")); !bytes.HasPrefix(b, []byte("machine.nodes,workload.dht.inserts,scheme,collisions,seeds,inserts_per_second_mean,inserts_per_second_ci95,")) {
		t.Fatalf("sweep-summary.csv:\n%s", b)
	}
	// A rerun takes every task from its part: the parts are not rewritten.
	before, _ := os.Stat(filepath.Join(local, "parts", "task-000002.json"))
	if out, err := aaemu(t, "sweep", file, "--out", local, "-j", "2"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	after, _ := os.Stat(filepath.Join(local, "parts", "task-000002.json"))
	if !before.ModTime().Equal(after.ModTime()) {
		t.Error("a rerun ran a task that was done with the same inputs")
	}
	if out, err := aaemu(t, "sweep", file, "--out", local, "--fresh", "-j", "2"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if fresh, _ := os.Stat(filepath.Join(local, "parts", "task-000002.json")); fresh.ModTime().Equal(after.ModTime()) {
		t.Error("--fresh reused a part")
	}
}

// The executors' options: clear errors before anything runs.
func TestSweepExecutorErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(file, []byte("grid:\n  machine.nodes: [2, 3]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ args, want string }{
		{"--shard 2/2", `--shard "2/2": want i/n, the i-th of n shares (0 ≤ i < n)`},
		{"--shard 0/3", "--shard 0/3: the sweep has 2 tasks, fewer than 3 shares"},
		{"--shard 0/2 --executor local", "--shard runs one share here: it takes no --executor"},
		{"--shard 0/2 --fresh", "--fresh with --shard would remove the other shares' parts"},
		{"--executor pbs", `--executor "pbs": want local or slurm`},
		{"--executor slurm --slurm-tasks 3", "--slurm-tasks 3: want 1..2 (the sweep's tasks)"},
		{"--executor slurm --slurm-option qos=short", `--slurm-option "qos=short": want one sbatch option such as --qos=short`},
	} {
		args := append([]string{"sweep", file, "--out", filepath.Join(dir, "out")}, strings.Fields(tc.args)...)
		if out, err := aaemu(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sweep %s: %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
	if _, err := aaemu(t, "sweep", "merge", dir); err == nil || !strings.Contains(err.Error(), "not a sweep's parts directory") {
		t.Errorf("merge of a directory without parts: %v", err)
	}
}
