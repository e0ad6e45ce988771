package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/testtool"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/waveforms"
)

const smallScenario = "../../examples/dht-small.yaml"

func runSmall(t *testing.T, extra ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	out, err := aaemu(t, append([]string{"run", smallScenario, "--out", dir}, extra...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return dir, out
}

// `aaemu run` on a scenario prints the comparison and writes a VCD the
// strict reader accepts, a save file, a capture and the statistics with
// every experiment's result.
func TestRunScenarioOutputs(t *testing.T) {
	dir, out := runSmall(t)
	for _, want := range []string{"AA-SP", "RMA", "as fast as RMA at 5% collisions", "run.pcapng"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
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
	if _, ok := v.ByPath("node1.iommu.logged"); !ok {
		t.Fatal("the target IOMMU's decision is not traced")
	}
	var stats struct {
		Complete bool
		Results  []struct {
			Scheme        string
			Verified      bool
			InsertsPerSec float64 `json:"inserts_per_second"`
		}
		Experiments []struct {
			Label, Scheme    string
			Collisions       *float64
			Traced, Complete bool
			Simulation       struct {
				EndTimePS uint64 `json:"end_time_ps"`
			}
			Stats map[string]struct{ Value uint64 }
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "stats.json"))
	if err := json.Unmarshal(raw, &stats); err != nil {
		t.Fatal(err)
	}
	if len(stats.Results) != 4 || !stats.Complete {
		t.Fatalf("%d results, complete %v", len(stats.Results), stats.Complete)
	}
	for _, r := range stats.Results {
		if !r.Verified || r.InsertsPerSec <= 0 {
			t.Fatalf("result %+v", r)
		}
	}
	// Every experiment's own statistics, labelled: the AA runs logged every
	// insert, the RMA runs nothing; the first is the traced one.
	if len(stats.Experiments) != 4 {
		t.Fatalf("%d experiments in stats.json, want 4", len(stats.Experiments))
	}
	for i, x := range stats.Experiments {
		if x.Scheme != stats.Results[i].Scheme || x.Collisions == nil || !x.Complete || x.Traced != (i == 0) ||
			!strings.HasPrefix(x.Label, x.Scheme+" at ") || x.Simulation.EndTimePS == 0 {
			t.Fatalf("experiment %d: %s %v complete %v traced %v", i, x.Label, x.Collisions, x.Complete, x.Traced)
		}
		want := uint64(200)
		if x.Scheme == "RMA" {
			want = 0
		}
		if got := x.Stats["node1.iommu.records"].Value; got != want {
			t.Fatalf("%s logged %d records, want %d", x.Label, got, want)
		}
	}
	if stats.Experiments[0].Simulation == stats.Experiments[2].Simulation {
		t.Fatal("the experiments' statistics are the same: not each its own")
	}
}

// Two runs of one scenario and seed are byte-identical: statistics, VCD
// and capture.
func TestRunScenarioDeterministic(t *testing.T) {
	a, _ := runSmall(t, "--no-host-stats")
	b, _ := runSmall(t, "--no-host-stats")
	for _, f := range []string{"stats.json", "run.vcd", "run.gtkw", "run.pcapng"} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs (%d and %d bytes)", f, len(x), len(y))
		}
	}
}

// The built-in default scenario is deterministic too.
func TestDefaultScenarioDeterministic(t *testing.T) {
	var dirs []string
	for i := 0; i < 2; i++ {
		d := t.TempDir()
		if out, err := aaemu(t, "run", "--out", d, "--no-host-stats"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		dirs = append(dirs, d)
	}
	for _, f := range []string{"stats.json", "run.vcd", "run.pcapng"} {
		x, _ := os.ReadFile(filepath.Join(dirs[0], f))
		y, _ := os.ReadFile(filepath.Join(dirs[1], f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs of the default scenario", f)
		}
	}
}

// tshark decodes the run's capture as RoCE: RDMA WRITE Only requests with
// consecutive PSNs, RETH addresses in the table, 16-byte DMA lengths, ACKs
// for them, and no malformed frame; scapy agrees with every ICRC.
func TestRunCaptureDecodes(t *testing.T) {
	tshark := testtool.Need(t, "tshark")
	dir, _ := runSmall(t)
	pcap := filepath.Join(dir, "run.pcapng")
	out, err := exec.Command(tshark, testtool.TsharkArgs("-r", pcap, "-T", "fields", "-E", "separator=,",
		"-e", "ip.src", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn", "-e", "infiniband.reth.va",
		"-e", "infiniband.reth.dmalen", "-e", "infiniband.aeth.syndrome", "-e", "frame.comment")...).Output()
	if err != nil {
		t.Fatal(err)
	}
	writes, acks, flushes := 0, 0, 0
	nextPSN := -1
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ",")
		switch f[1] {
		case "10": // RC RDMA WRITE Only
			psn, _ := strconv.Atoi(f[2])
			if nextPSN >= 0 && psn != nextPSN {
				t.Fatalf("write PSN %d after %d", psn, nextPSN-1)
			}
			nextPSN = psn + 1
			if f[4] != "16" || !strings.HasPrefix(f[3], "0x00000000") || !strings.HasPrefix(f[6], "txn=") {
				t.Fatalf("write frame fields %v", f)
			}
			writes++
		case "17": // Acknowledge
			if f[5] != "31" {
				t.Fatalf("ACK syndrome %s", f[5])
			}
			acks++
		case "12", "16": // the active flush: a READ of the flushing page and its response
			flushes++
		default:
			t.Fatalf("unexpected opcode in an AA run: %v", f)
		}
	}
	if writes != 200 || acks != 200 || flushes != 2 {
		t.Fatalf("%d writes, %d ACKs, %d flush frames; want 200, 200, 2", writes, acks, flushes)
	}
	bad, _ := exec.Command(tshark, testtool.TsharkArgs("-r", pcap, "-Y", "_ws.malformed || _ws.expert.severity >= warning")...).Output()
	if s := strings.TrimSpace(string(bad)); s != "" {
		t.Fatalf("tshark flags frames:\n%s", s)
	}
	testtool.Need(t, "python3")
	script := "import sys\nfrom scapy.all import rdpcap\nfrom scapy.contrib.roce import BTH\nn=0\nfor p in rdpcap(sys.argv[1]):\n    b=p[BTH]\n    n += b.icrc == int.from_bytes(b.compute_icrc(None),'big')\nprint(n)\n"
	res, err := exec.Command("/usr/bin/python3", "-c", script, pcap).Output()
	if err != nil {
		t.Fatalf("scapy: %v", err)
	}
	if strings.TrimSpace(string(res)) != fmt.Sprint(writes+acks+flushes) {
		t.Fatalf("scapy confirms %s ICRCs of %d frames", strings.TrimSpace(string(res)), writes+acks+flushes)
	}
}

// aaemu trace follows one insert from the CPU call to the handler and the
// completion.
func TestTraceFollowsAnOperation(t *testing.T) {
	out, err := aaemu(t, "trace", smallScenario, "--op", "5")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, step := range []string{"dht.insert", "tlp.MWr.doorbell", "tlp.MRd", "wqe", "frame.RDMA WRITE Only",
		"iommu.blocked+record(iuid=1", "handler.PUT", "frame.ACK", "iommu.pass"} {
		if !strings.Contains(out, step) {
			t.Errorf("trace lacks %q:\n%s", step, out)
		}
	}
	if _, err := aaemu(t, "trace", smallScenario, "--op", "100000"); err == nil {
		t.Fatal("an operation beyond the run accepted")
	}
}

func TestRunScenarioErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("machine:\n  pcie:\n    width: 3\n"), 0o644)
	_, err := aaemu(t, "run", bad, "--out", dir)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:3: machine.pcie.width: x3") {
		t.Fatalf("error %v", err)
	}
}

// `aaemu run` runs a scenario of another workload (workload.kind): a line
// per scheme, each checked, stats.json with that workload's results and
// section, byte-identical on a rerun.
func TestRunOtherWorkload(t *testing.T) {
	var stats [2][]byte
	for i := range stats {
		dir := t.TempDir()
		out, err := aaemu(t, "run", "../../examples/counter.yaml", "--out", dir, "--no-host-stats")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, want := range []string{"workload counter", "No-Cnt", "Allreduce", "accesses/s", "NIC energy"} {
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
			Workload map[string]json.RawMessage `json:"workload"`
		} `json:"config"`
		Results []scenario.WorkloadResult `json:"results"`
	}
	if err := json.Unmarshal(stats[0], &st); err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Config.Workload["counter"]; !ok || len(st.Config.Workload) != 2 || len(st.Results) != 5 {
		t.Fatalf("config %v, %d results", st.Config.Workload, len(st.Results))
	}
	for _, r := range st.Results {
		if r.Workload != "counter" || !r.Verified || r.Rate <= 0 || r.NICEnergyJ <= 0 {
			t.Fatalf("result %+v", r)
		}
	}
}
