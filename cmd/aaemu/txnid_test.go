package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/testtool"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/waveforms"
)

// runIDs is what a run says about its transactions: the count in
// stats.json, every frame's txn/cause comment in the capture (read by
// tshark) and the VCD.
type runIDs struct {
	count    []float64 // per experiment
	comments []string
	vcd      *waveforms.File
}

func readRunIDs(t *testing.T, dir string) runIDs {
	t.Helper()
	var r runIDs
	var stats struct {
		Experiments []struct {
			Simulation struct {
				Transactions float64 `json:"transactions"`
			} `json:"simulation"`
		} `json:"experiments"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &stats); err != nil {
		t.Fatal(err)
	}
	for _, x := range stats.Experiments {
		r.count = append(r.count, x.Simulation.Transactions)
	}
	if pcap := filepath.Join(dir, "run.pcapng"); fileExists(pcap) {
		tshark := testtool.Need(t, "tshark")
		out, err := exec.Command(tshark, testtool.TsharkArgs("-r", pcap, "-T", "fields", "-e", "frame.comment")...).Output()
		if err != nil {
			t.Fatal(err)
		}
		r.comments = strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	if vcd := filepath.Join(dir, "run.vcd"); fileExists(vcd) {
		data, err := os.ReadFile(vcd)
		if err != nil {
			t.Fatal(err)
		}
		if r.vcd, err = waveforms.Parse(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// rawValueAt is a signal's value (as written) at time t from its history.
func rawValueAt(h []waveforms.Change, t uint64) string {
	v := ""
	for _, c := range h {
		if c.T > t {
			break
		}
		v = c.V
	}
	return v
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Transaction IDs are the thread a user follows from `aaemu trace` into
// GTKWave and Wireshark: every output and option of a run gives the same
// IDs, and the trace's frames are the capture's.
func TestTransactionIDsIndependentOfOutputs(t *testing.T) {
	base, _ := runSmall(t, "--no-host-stats")
	want := readRunIDs(t, base)
	if len(want.count) == 0 || want.count[0] == 0 || len(want.comments) == 0 || want.vcd == nil {
		t.Fatalf("the plain run lacks IDs: %v transactions, %d frames", want.count, len(want.comments))
	}
	for _, opts := range [][]string{
		{"--txn-log"},
		{"--no-vcd"},
		{"--no-pcap"},
		{"--trace", "node1.iommu"},
		{"--trace-from", "2us", "--trace-to", "9us"},
		{"--txn-log", "--no-vcd", "--no-pcap"},
	} {
		t.Run(strings.Join(opts, " "), func(t *testing.T) {
			dir, _ := runSmall(t, append([]string{"--no-host-stats"}, opts...)...)
			got := readRunIDs(t, dir)
			if fmt.Sprint(got.count) != fmt.Sprint(want.count) {
				t.Errorf("transactions per experiment %v, the plain run has %v", got.count, want.count)
			}
			if got.comments != nil && strings.Join(got.comments, "\n") != strings.Join(want.comments, "\n") {
				t.Errorf("the capture's txn comments differ from the plain run's")
			}
			if got.vcd != nil {
				// Every signal this run traced changes as in the full trace,
				// within the window it traced.
				for _, v := range got.vcd.Vars {
					full := want.vcd.History(v.Path)
					if full == nil {
						t.Fatalf("%s is not in the full trace", v.Path)
					}
					for _, c := range got.vcd.History(v.Path) {
						if w := rawValueAt(full, c.T); w != c.V {
							t.Fatalf("%s at %d: %q, the full trace has %q", v.Path, c.T, c.V, w)
						}
					}
				}
			}
		})
	}
}

// The transactions `aaemu trace` lists are the ones a plain run writes:
// its frames carry the same txn and cause in the capture.
func TestTraceIDsMatchCapture(t *testing.T) {
	dir := t.TempDir()
	if out, err := aaemu(t, "run", "--out", dir, "--no-host-stats"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	comments := strings.Join(readRunIDs(t, dir).comments, "\n")
	out, err := aaemu(t, "trace", "--op", "5")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// A frame step: "  time  +op  +cause  txn  frame.KIND [nodeN.nic0]".
	frame := regexp.MustCompile(`(?m)^\s+\S+\s+\S+\s+\S+\s+([\d.]+)\s+frame\.`)
	ms := frame.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		t.Fatalf("the trace has no frames:\n%s", out)
	}
	for _, m := range ms {
		if !regexp.MustCompile(`(?m)^txn=` + regexp.QuoteMeta(m[1]) + ` `).MatchString(comments) {
			t.Errorf("the trace's frame txn %s is not in the plain run's capture", m[1])
		}
	}
}

// `aaemu trace` follows an operation of whatever workload the scenario
// runs, not a DHT under another workload's name.
func TestTraceEveryWorkload(t *testing.T) {
	prefix := map[string]string{"dht": "dht.", "counter": "counter.", "getlog": "getlog.", "checkpoint": "ckpt.",
		"xor": "xor.", "stream": "stream.", "sort": "sort."}
	for _, kind := range scenario.Kinds {
		t.Run(kind, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "s.yaml")
			if err := os.WriteFile(file, []byte("workload:\n  kind: "+kind+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if kind == scenario.KindSplitC {
				// Its ranks start no traced operation: refused, saying so.
				if out, err := aaemu(t, "trace", "../../examples/am2-clump.yaml", "--op", "1"); err == nil || !strings.Contains(err.Error(), "start no traced operation") {
					t.Fatalf("trace of a splitc scenario: %v\n%s", err, out)
				}
				return
			}
			out, err := aaemu(t, "trace", file, "--op", "1")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			head := strings.SplitN(out, "\n", 2)[0]
			if !strings.Contains(head, ": "+prefix[kind]) || (kind != "dht" && !strings.Contains(head, "workload "+kind)) {
				t.Fatalf("the trace of a %s scenario follows something else: %s", kind, head)
			}
			if strings.Count(out, "\n") < 4 {
				t.Fatalf("the operation has no steps:\n%s", out)
			}
		})
	}
}
