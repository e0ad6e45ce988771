package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// `aaemu micro pingpong` and `loggp` print their tables for both paths
// and write the CSV (and the plots) they say they write; bad flags are
// errors that name them.
func TestMicroCommands(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "micro", "pingpong", "--min", "0", "--max", "4096", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"ping-pong on the built-in machine", "shm: peak", "rdma: peak", "half-power point", "pingpong-bandwidth.svg"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rows := readCSV(t, filepath.Join(dir, "pingpong.csv"))
	if len(rows) != 1+2*14 || rows[1][0] != "shm" || rows[1][2] != "0" || rows[len(rows)-1][0] != "rdma" || rows[len(rows)-1][2] != "4096" {
		t.Fatalf("pingpong.csv: %d rows, first %v, last %v", len(rows), rows[1], rows[len(rows)-1])
	}
	for _, p := range []string{"pingpong-latency.png", "pingpong-latency.svg", "pingpong-bandwidth.png", "pingpong-bandwidth.svg"} {
		if st, err := os.Stat(filepath.Join(dir, p)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	out, err = aaemu(t, "micro", "loggp", "--path", "rdma", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "rdma") || strings.Contains(out, "shm ") || !strings.Contains(out, "1/G (MB/s)") {
		t.Fatalf("loggp output:\n%s", out)
	}
	for _, bad := range [][]string{
		{"micro", "pingpong", "--path", "myrinet", "--out", dir},
		{"micro", "pingpong", "--min", "8", "--max", "4", "--out", dir},
		{"micro", "loggp", "--iters", "0", "--out", dir},
	} {
		out, err := aaemu(t, bad...)
		if err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: error %v\n%s", bad, err, out)
		}
	}
}

// `aaemu verify mpi` runs random MPI traffic on every fabric and checks it
// with the independent delivery model.
func TestVerifyMPICommand(t *testing.T) {
	out, err := aaemu(t, "verify", "mpi", "--seeds", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range []string{"shm", "rdma", "mixed"} {
		if !strings.Contains(out, "fabric "+f) || !strings.Contains(out, "delivered as MPI requires") {
			t.Fatalf("output lacks fabric %s:\n%s", f, out)
		}
	}
	if _, err := aaemu(t, "verify", "mpi", "--fabric", "myrinet"); err == nil || !strings.Contains(err.Error(), "--fabric") {
		t.Fatalf("a bad fabric: %v", err)
	}
}

// --vary runs a microbenchmark at each value of a scenario key, as a sweep
// sets it: a faster wire gives a larger 1/G, each value is a row of the
// CSV, and a misspelt key or a value out of range is refused by name.
func TestMicroVary(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "micro", "loggp", "--path", "rdma", "--vary", "machine.wire.rate_mbps=1000,10000", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rows := readCSV(t, filepath.Join(dir, "loggp.csv"))
	if len(rows) != 3 || rows[1][1] != "machine.wire.rate_mbps=1000" || rows[2][1] != "machine.wire.rate_mbps=10000" {
		t.Fatalf("loggp.csv: %v", rows)
	}
	g := func(r []string) float64 { v, _ := strconv.ParseFloat(r[7], 64); return v }
	if g(rows[1]) < 5*g(rows[2]) {
		t.Fatalf("G at 1 Gb/s %v ps/B is not several times G at 10 Gb/s %v", g(rows[1]), g(rows[2]))
	}
	for _, bad := range []struct{ vary, want string }{
		{"machine.wire.rate_mpbs=1", `did you mean "machine.wire.rate_mbps"`},
		{"machine.wire.rate_mbps=0", "0 is out of range"},
		{"machine.wire.rate_mbps", "want KEY=V1,V2"},
	} {
		if _, err := aaemu(t, "micro", "loggp", "--vary", bad.vary, "--out", dir); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("--vary %s: %v, want %q", bad.vary, err, bad.want)
		}
	}
}

// --layer am2 measures AM-II (the layer and the polling policy in the
// heading, the layer in the CSV's last column): shm-only on two cores of a
// node, the network protocol (--path rdma) between two nodes; a policy
// that does not reach the path, a policy for another layer, or a layer
// that does not exist, is an error that names the flag.
func TestMicroLayer(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "micro", "loggp", "--layer", "am2", "--poll", "shm-only", "--machine", "../../examples/machines/e5000.yaml", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "layer am2") || !strings.Contains(out, "polling shm-only") || !strings.Contains(out, "shm ") || strings.Contains(out, "rdma") {
		t.Fatalf("loggp --layer am2 output:\n%s", out)
	}
	rows := readCSV(t, filepath.Join(dir, "loggp.csv"))
	if len(rows) != 2 || rows[0][len(rows[0])-1] != "layer" || rows[1][0] != "shm" || rows[1][len(rows[1])-1] != "am2" {
		t.Fatalf("loggp.csv: %v", rows)
	}
	out, err = aaemu(t, "micro", "pingpong", "--layer", "am2", "--path", "rdma", "--max", "64", "--machine", "../../examples/machines/e5000.yaml", "--out", dir)
	if err != nil || !strings.Contains(out, "polling adaptive") || !strings.Contains(out, "rdma: peak") {
		t.Fatalf("pingpong --layer am2 --path rdma: %v\n%s", err, out)
	}
	out, err = aaemu(t, "micro", "pingpong", "--max", "64", "--path", "shm", "--out", dir)
	if err != nil || !strings.Contains(out, "layer mpi") {
		t.Fatalf("pingpong, the default layer: %v\n%s", err, out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"micro", "loggp", "--layer", "am2", "--path", "rdma", "--poll", "shm-only", "--out", dir}, "--layer am2 --path rdma --poll shm-only"},
		{[]string{"micro", "pingpong", "--layer", "am2", "--path", "shm", "--poll", "net-only", "--out", dir}, "--poll net-only"},
		{[]string{"micro", "pingpong", "--layer", "am2", "--poll", "1/0", "--out", dir}, "--poll"},
		{[]string{"micro", "pingpong", "--poll", "1/8", "--out", dir}, "--layer am2 only"},
		{[]string{"micro", "pingpong", "--layer", "myrinet", "--out", dir}, "--layer"},
	} {
		if out, err := aaemu(t, bad.args...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: error %v, want %q\n%s", bad.args, err, bad.want, out)
		}
	}
}

// readCSV reads a CSV file the command wrote.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
