package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// `aaemu paper multirail --fragment F --fragments K` runs the figures on
// fragments of F bytes and messages up to K of them: the title and the
// table say so. A fragment of 0 or not a multiple of the path MTU, a
// fragment count that is not a power of two up to 64, a message over 4 GB
// and the flags on another paper are refused before anything runs.
func TestPaperMultirailFragment(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "multirail", "5b", "--fragment", "64KB", "--fragments", "4", "-j", "1", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "fragments of 64 KB (the paper's 64 MB scaled by 1/1024), up to 4 of them") {
		t.Fatalf("5b with 64 KB fragments:\n%s", out)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "multirail", "fig5b", "points.csv"))
	if err != nil || !strings.Contains(string(csv), "\n262144,") || strings.Contains(string(csv), "\n524288,") {
		t.Fatalf("fig5b/points.csv: %v\n%s", err, csv)
	}
	// Matching on arrival: the eager sizes are faster (no copy by the
	// receiving core), the rendezvous sizes no slower.
	dir2 := t.TempDir()
	out, err = aaemu(t, "paper", "multirail", "5b", "--fragment", "64KB", "--fragments", "4", "--matching", "on-arrival", "-j", "1", "--out", dir2)
	if err != nil || !strings.Contains(out, "matching on arrival in the NIC") {
		t.Fatalf("5b on arrival: %v\n%s", err, out)
	}
	csv2, err := os.ReadFile(filepath.Join(dir2, "multirail", "fig5b", "points.csv"))
	if err != nil {
		t.Fatal(err)
	}
	poll, arr := mrPoints(t, string(csv)), mrPoints(t, string(csv2))
	if a, b := arr["4096,PingPong 1 NIC"], poll["4096,PingPong 1 NIC"]; !(a > b) {
		t.Errorf("4 KB: on arrival %v MB/s, on poll %v: want faster", a, b)
	}
	if a, b := arr["262144,PingPong 1 NIC"], poll["262144,PingPong 1 NIC"]; a < 0.999*b {
		t.Errorf("256 KB: on arrival %v MB/s, on poll %v: want no slower", a, b)
	}
	for _, tc := range []struct{ args, want string }{
		{"multirail --fragment 0", "--fragment 0: want a positive multiple of the path MTU (4096 bytes)"},
		{"multirail --fragment 1000", "--fragment 1000: not a multiple of the path MTU (4096 bytes)"},
		{"multirail --fragment 6000", "--fragment 6000: not a multiple of the path MTU (4096 bytes)"},
		{"multirail --fragment -4096", "--fragment \"-4096\": want a byte count"},
		{"multirail --fragment 1x", "--fragment \"1x\": want a byte count"},
		{"multirail --fragments 3", "--fragments 3: want a power of two in 1..64"},
		{"multirail --fragments 0", "--fragments 0: want a power of two in 1..64"},
		{"multirail --fragments 128", "--fragments 128: want a power of two in 1..64"},
		{"multirail --fragment 128MB --fragments 64", "messages of 8589934592 bytes, want at most 4294967296"},
		{"6c --fragment 64MB", "--fragment, --fragments, --matching, --bulk and --iommu apply to the multirail paper's own figures"},
		{"6c --matching on-arrival", "--fragment, --fragments, --matching, --bulk and --iommu apply to the multirail paper's own figures"},
		{"6c --bulk batched", "--fragment, --fragments, --matching, --bulk and --iommu apply to the multirail paper's own figures"},
		{"multirail --matching sometimes", "--matching \"sometimes\": want on-poll or on-arrival"},
		{"multirail --bulk fast", "--bulk \"fast\": want cycle or batched"},
		{"6c --iommu bypass", "--fragment, --fragments, --matching, --bulk and --iommu apply to the multirail paper's own figures"},
		{"multirail --iommu off", "--iommu \"off\": want on or bypass"},
		{"multirail 5c --fragment 64MB", "5c"},
	} {
		if out, err := aaemu(t, append(strings.Fields("paper "+tc.args), "--out", dir)...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("paper %s: %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"4096", 4096, true}, {"64KB", 64 << 10, true}, {"64 MB", 64 << 20, true}, {"1gb", 1 << 30, true}, {"12B", 12, true},
		{"", 0, false}, {"MB", 0, false}, {"1.5MB", 0, false}, {"-1", 0, false}, {"2TB", 0, false}, {"9999999GB", 0, false},
	} {
		got, err := parseBytes(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// `aaemu paper multirail rails` writes each NIC's wire bandwidth over time
// (points.csv) and its plot; the data show every NIC busy in one window.
func TestPaperMultirailRails(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "multirail", "rails", "--fragment", "64KB", "-j", "1", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	fig := filepath.Join(dir, "multirail", "figrails")
	for _, f := range []string{"figrails.png", "figrails.svg"} {
		if st, err := os.Stat(filepath.Join(fig, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	data, err := os.ReadFile(filepath.Join(fig, "points.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
	if err != nil || len(rows) < 2 || strings.Join(rows[0], ",") != "time,scheme,wire_bandwidth" {
		t.Fatalf("points.csv: %v\n%s", err, data)
	}
	busy := map[string]map[string]bool{} // window → NICs above 6 GB/s (half the line rate)
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatalf("row %v: %v", r, err)
		}
		if busy[r[0]] == nil {
			busy[r[0]] = map[string]bool{}
		}
		if v > 6 {
			busy[r[0]][r[1]] = true
		}
	}
	together := 0
	for _, nics := range busy {
		if len(nics) == 4 {
			together++
		}
	}
	if together == 0 {
		t.Fatalf("no window with all 4 NICs above half their line rate:\n%s", data)
	}
	if !strings.Contains(out, "the rails carry one message together") {
		t.Errorf("no rails claim in the output:\n%s", out)
	}
}

// mrPoints reads a figure's points.csv into "size,scheme" → value.
func mrPoints(t *testing.T, data string) map[string]float64 {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatalf("row %v: %v", r, err)
		}
		out[r[0]+","+r[1]] = v
	}
	return out
}

// `aaemu paper multirail --bulk batched` runs the fragments' middle work
// requests by the bulk DMA path: Figure 5b (PingPong over one NIC, where
// the path is exact) writes the same points as TLP by TLP, to the byte.
func TestPaperMultirailBulk(t *testing.T) {
	var pts []string
	for _, mode := range []string{"cycle", "batched"} {
		dir := t.TempDir()
		out, err := aaemu(t, "paper", "multirail", "5b", "--fragment", "1MB", "--fragments", "4", "--bulk", mode, "-j", "1", "--out", dir)
		if err != nil {
			t.Fatalf("--bulk %s: %v\n%s", mode, err, out)
		}
		if batched := strings.Contains(out, "fragments by the bulk DMA path"); batched != (mode == "batched") {
			t.Errorf("--bulk %s: the title says batched %v\n%s", mode, batched, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, "multirail", "fig5b", "points.csv"))
		if err != nil || !strings.Contains(string(b), "\n4194304,") {
			t.Fatalf("--bulk %s: fig5b/points.csv: %v\n%s", mode, err, b)
		}
		pts = append(pts, string(b))
	}
	if pts[0] != pts[1] {
		t.Errorf("5b's points differ:\ncycle:\n%s\nbatched:\n%s", pts[0], pts[1])
	}
}
