package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/testtool"
)

// Every NIC counter a capture can confirm agrees with the capture of the
// run, read by tshark: on lossy 10 Gb/s wires, each NIC's frames out, and
// its retransmissions (request packets that go on its wire again: a
// (QP, PSN) its wire already carried).
func TestRunCountersMatchCapture(t *testing.T) {
	tshark := testtool.Need(t, "tshark")
	dir := t.TempDir()
	if out, err := aaemu(t, "run", "../../examples/dht-lossy-10g.yaml", "--out", dir, "--no-vcd"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var stats struct {
		Experiments []struct {
			Traced bool `json:"traced"`
			Stats  map[string]struct {
				Value uint64 `json:"value"`
			} `json:"stats"`
		} `json:"experiments"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &stats); err != nil {
		t.Fatal(err)
	}
	counter := func(name string) uint64 {
		for _, x := range stats.Experiments {
			if x.Traced {
				st, ok := x.Stats[name]
				if !ok {
					t.Fatalf("no counter %s", name)
				}
				return st.Value
			}
		}
		t.Fatal("no traced experiment")
		return 0
	}
	out, err := exec.Command(tshark, testtool.TsharkArgs("-r", filepath.Join(dir, "run.pcapng"), "-T", "fields",
		"-e", "frame.interface_name", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn")...).Output()
	if err != nil {
		t.Fatal(err)
	}
	frames := map[string]uint64{}
	resent := map[string]uint64{}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 4 {
			t.Fatalf("tshark line %q", l)
		}
		wire := f[0] // net.wireXY: node X's wire to node Y
		frames[wire]++
		op, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("opcode %q", f[1])
		}
		// RC requests: SEND 0–5, WRITE 6–11, READ request 12, CmpSwap 19,
		// FetchAdd 20 (13–16 are READ responses, 17 ACK, 18 atomic ACK).
		if op <= 12 || op == 19 || op == 20 {
			k := wire + "/" + f[2] + "/" + f[3]
			if seen[k] {
				resent[wire]++
			}
			seen[k] = true
		}
	}
	for node := 0; node < 2; node++ {
		wire := fmt.Sprintf("net.wire%d%d", node, 1-node)
		nic := fmt.Sprintf("node%d.nic0.", node)
		if got, want := counter(nic+"frames_out"), frames[wire]; got != want {
			t.Errorf("%sframes_out = %d, the capture has %d frames on %s", nic, got, want, wire)
		}
		if got, want := counter(nic+"retransmissions"), resent[wire]; got != want {
			t.Errorf("%sretransmissions = %d, the capture shows %d request packets sent again on %s", nic, got, want, wire)
		}
	}
	if resent["net.wire01"] == 0 {
		t.Fatal("the lossy run resent nothing: the test no longer tests retransmissions")
	}
}
