package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/scenario"
)

// `aaemu paper am2 --reduced` runs seed 000's figures on reduced sizes
// into OUT/am2/: for each the points, the plot and the claims with the
// paper's value, aaemu's, the tolerance and a verdict; claims.md collects
// them. A figure the paper does not have is refused.
func TestPaperAM2(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "am2", "table2", "4", "bandwidth", "polling", "--reduced", "--out", dir, "-j", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure table2", "Figure 4", "Figure bandwidth", "Figure polling",
		"A1 shm single-protocol round trip", "5.6 µs, 2.8 µs", "A8 network g and round trip", "A9 multi-protocol send overhead",
		"345 cycles", "A11 network half-power point", "A10 an idle network poll"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"figtable2/points.csv", "figtable2/figtable2.png", "fig4/points.csv", "fig4/fig4.svg",
		"figbandwidth/points.csv", "figpolling/points.csv", "claims.md"} {
		if st, err := os.Stat(filepath.Join(dir, "am2", f)); err != nil || st.Size() < 100 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "am2", "figtable2", "points.csv"))
	if err != nil || !strings.HasPrefix(string(csv), "message_size,system,scheme,time\n8,shm single-protocol,L,") || strings.Count(string(csv), "\n") != 1+4*6 {
		t.Fatalf("table2 points.csv: %v\n%s", err, csv)
	}
	claims, err := os.ReadFile(filepath.Join(dir, "am2", "claims.md"))
	if err != nil || !strings.Contains(string(claims), "A5 network round trip / shm round trip") {
		t.Fatalf("claims.md: %v\n%s", err, claims)
	}
	if _, err := aaemu(t, "paper", "am2", "table9", "--reduced", "--out", dir); err == nil || !strings.Contains(err.Error(), "table9") {
		t.Fatalf("a figure am2 does not have: %v", err)
	}
}

// `aaemu paper am2 table4 table5 table6 --reduced` runs seed 000's
// application tables on reduced sizes into OUT/am2/: the points, the
// plots and the claims (Table 6: 32 processors on the Clump and on a NOW
// of 32, about 25 s of CPU).
func TestPaperAM2Apps(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "am2", "table4", "table5", "table6", "--reduced", "--out", dir, "-j", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure table4", "Table 4: messages per processor on the Clump", "48 and 14", "A16 EM3D", "Figure table5", "A13 multi-protocol against shared memory only on one SMP",
		"Figure table6", "A14 Clump against NOW, 3D FFT", "A15 EM3D on the Clump", "EM3D best against best"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"figtable4/points.csv", "figtable4/figtable4.png", "figtable4/figtable4.svg", "figtable5/points.csv", "figtable5/figtable5.png",
		"figtable6/points.csv", "figtable6/figtable6.png", "claims.md"} {
		if st, err := os.Stat(filepath.Join(dir, "am2", f)); err != nil || st.Size() < 100 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "am2", "figtable4", "points.csv"))
	if err != nil || !strings.HasPrefix(string(csv), "processors,run,scheme,messages_per_processor\n32,3D FFT,\"network short, mean\",") || strings.Count(string(csv), "\n") != 1+5*8 {
		t.Fatalf("points.csv: %v\n%s", err, csv)
	}
	// Table 6: every run on both platforms, its result checked (a point
	// only when it is), and no claim left unmeasured.
	csv6, err := os.ReadFile(filepath.Join(dir, "am2", "figtable6", "points.csv"))
	if err != nil || strings.Count(string(csv6), "\n") != 1+5*2 || !strings.Contains(string(csv6), "EM3D/good,\"NOW of 32, Myrinet only\",") {
		t.Fatalf("table6 points.csv: %v\n%s", err, csv6)
	}
	if strings.Contains(out, "not measured") {
		t.Fatalf("a claim not measured:\n%s", out)
	}
}

// `aaemu run examples/am2-clump.yaml` runs seed 000's EM3D over AM-II on
// two E5000s with three Myrinet-like NIUs each, once per polling policy:
// every result checked against the serial computation, the messages
// network and local, stats.json byte-identical on a rerun with the
// scenario's AM-II keys in it.
func TestRunAM2Scenario(t *testing.T) {
	var stats [2][]byte
	for i := range stats {
		dir := t.TempDir()
		out, err := aaemu(t, "run", "../../examples/am2-clump.yaml", "--out", dir, "--no-host-stats")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, want := range []string{"workload splitc", "adaptive", "1/8", "1/32", "messages/s", "EM3D/good on a Clump of 2 × 4", "network and"} {
			if !strings.Contains(out, want) {
				t.Fatalf("output lacks %q:\n%s", want, out)
			}
		}
		if stats[i], err = os.ReadFile(filepath.Join(dir, "stats.json")); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(stats[0], stats[1]) {
		t.Fatal("stats.json differs between two runs of one scenario")
	}
	var st struct {
		Config struct {
			Machine struct {
				StartX scenario.StartXSpec `json:"startx"`
			} `json:"machine"`
			Workload map[string]json.RawMessage `json:"workload"`
		} `json:"config"`
		Results []scenario.WorkloadResult `json:"results"`
	}
	if err := json.Unmarshal(stats[0], &st); err != nil {
		t.Fatal(err)
	}
	if x := st.Config.Machine.StartX; x.NIUs != 3 || x.Network != "crossbar" || x.DMAMBps != 38 || x.RDMAFrameBytes != 8256 {
		t.Fatalf("config's startx %+v", x)
	}
	if _, ok := st.Config.Workload["splitc"]; !ok || len(st.Results) != 3 {
		t.Fatalf("config %v, %d results", st.Config.Workload, len(st.Results))
	}
	for _, r := range st.Results {
		if r.Workload != "splitc" || !r.Verified || r.Rate <= 0 || r.SimTimePS == 0 {
			t.Fatalf("result %+v", r)
		}
	}
}

// A figure run in parts (--runs, then --resume over the same directory)
// writes the points.csv and claims.md of a whole run to the byte; the
// part alone writes its points without checking the claims. Bad
// selections are refused before anything runs.
func TestPaperResumeAndRuns(t *testing.T) {
	whole, parts := t.TempDir(), t.TempDir()
	if out, err := aaemu(t, "paper", "am2", "table4", "--reduced", "--out", whole, "-j", "2"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := aaemu(t, "paper", "am2", "table4", "--reduced", "--out", parts, "-j", "2", "--runs", "EM3D/")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "(16 experiments in") || !strings.Contains(out, "claims not checked: 16 of its 40") || strings.Contains(out, "A16") {
		t.Fatalf("--runs EM3D/:\n%s", out)
	}
	csv, _ := os.ReadFile(filepath.Join(parts, "am2", "figtable4", "points.csv"))
	if strings.Count(string(csv), "\n") != 1+16 || strings.Contains(string(csv), "CON") {
		t.Fatalf("--runs EM3D/ points.csv:\n%s", csv)
	}
	out, err = aaemu(t, "paper", "am2", "table4", "--reduced", "--out", parts, "-j", "2", "--resume")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "(24 experiments in") || !strings.Contains(out, "16 from the earlier points.csv") || !strings.Contains(out, "A16") {
		t.Fatalf("--resume:\n%s", out)
	}
	for _, f := range []string{"figtable4/points.csv", "claims.md"} {
		a, _ := os.ReadFile(filepath.Join(whole, "am2", f))
		b, _ := os.ReadFile(filepath.Join(parts, "am2", f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s resumed:\n%s\nwhole:\n%s", f, b, a)
		}
	}
	// A resume of a finished figure runs nothing.
	if out, err = aaemu(t, "paper", "am2", "table4", "--reduced", "--out", parts, "--resume"); err != nil || !strings.Contains(out, "(0 experiments in") {
		t.Fatalf("a resume of a whole run: %v\n%s", err, out)
	}

	bad := filepath.Join(parts, "am2", "figtable4", "points.csv")
	if err := os.WriteFile(bad, []byte("processors,run,scheme,messages_per_processor\n32,3D FFT,\"network short, mean\",x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"paper", "am2", "table4", "--reduced", "--runs", "EM3D("}, `--runs "EM3D(": error parsing regexp`},
		{[]string{"paper", "am2", "table4", "--reduced", "--runs", "EM4D"}, `--runs "EM4D" matches no experiment of the figures (they are: processors 32 3D FFT network short, mean;`},
		{[]string{"paper", "6c", "--resume"}, "--resume and --runs apply to the figures that write points.csv; figure 6c is a sweep"},
		{[]string{"paper", "am2", "table4", "--reduced", "--resume", "--out", parts}, `points.csv:2: messages_per_processor "x": want a finite number`},
	} {
		if _, err := aaemu(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	// The refused resume left the earlier points as they were.
	if b, _ := os.ReadFile(bad); !strings.HasSuffix(string(b), ",x\n") {
		t.Fatalf("a refused resume changed points.csv:\n%s", b)
	}
}
