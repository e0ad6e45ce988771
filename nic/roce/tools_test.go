package roce

// Independent readers of aaemu's captures: tshark decodes every frame as
// RoCE with the fields aaemu meant, and scapy's RoCE layer recomputes every
// ICRC (tshark only displays it). `make deps` installs both; under CI a
// missing tool fails the test.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/testtool"
)

// The sample's frames alternate between two wires, at times with
// picoseconds below the nanosecond.
var sampleWires = []string{"net.wire01", "net.wire10"}

func sampleTime(i int) uint64 { return uint64(i)*1_000_001 + 7 }

func writeSample(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "sample.pcapng")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCapture(f, sampleWires)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range samplePackets() {
		fr := Frame{Src: NodeEndpoint(0, 0), Dst: NodeEndpoint(1, 0), SrcPort: 0xc011, Packet: p}
		b, err := fr.Serialize()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(i%len(sampleWires), sampleTime(i), b, fmt.Sprintf("txn=%d cause=%d", i+10, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

func TestTsharkDecodesRoCE(t *testing.T) {
	tshark := testtool.Need(t, "tshark")
	path := writeSample(t)
	out, err := exec.Command(tshark, testtool.TsharkArgs("-r", path, "-T", "fields", "-E", "separator=,",
		"-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn",
		"-e", "infiniband.bth.padcnt", "-e", "infiniband.reth.va", "-e", "infiniband.reth.r_key",
		"-e", "infiniband.reth.dmalen", "-e", "infiniband.aeth.syndrome", "-e", "infiniband.aeth.msn",
		"-e", "frame.comment")...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	pkts := samplePackets()
	if len(lines) != len(pkts) {
		t.Fatalf("tshark read %d frames, wrote %d:\n%s", len(lines), len(pkts), out)
	}
	for i, p := range pkts {
		f := strings.Split(lines[i], ",")
		want := []string{fmt.Sprint(p.Opcode), fmt.Sprintf("0x%06x", p.DestQP), fmt.Sprint(p.PSN),
			fmt.Sprint((4 - len(p.Payload)%4) % 4)}
		for j, w := range want {
			if f[j] != w {
				t.Errorf("frame %d (%s) field %d: tshark says %q, want %q", i+1, OpName(p.Opcode), j, f[j], w)
			}
		}
		if p.Opcode == WriteOnly || p.Opcode == ReadRequest {
			if f[4] != fmt.Sprintf("0x%016x", p.RETH.VA) || f[5] != fmt.Sprintf("0x%08x", p.RETH.RKey) || f[6] != fmt.Sprint(p.RETH.DMALen) {
				t.Errorf("frame %d RETH: %v", i+1, f[4:7])
			}
		}
		if p.Opcode == Ack && f[7] != fmt.Sprint(p.AETH.Syndrome) {
			t.Errorf("frame %d AETH syndrome %s", i+1, f[7])
		}
		if f[9] != fmt.Sprintf("txn=%d cause=%d", i+10, i) {
			t.Errorf("frame %d comment %q", i+1, f[9])
		}
	}
	bad, err := exec.Command(tshark, testtool.TsharkArgs("-r", path, "-Y", "_ws.malformed || _ws.expert.severity >= warning")...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(string(bad)); s != "" {
		t.Fatalf("tshark flags frames:\n%s", s)
	}
}

func TestScapyChecksICRC(t *testing.T) {
	testtool.Need(t, "python3")
	path := writeSample(t)
	script := `
import sys
from scapy.all import rdpcap
from scapy.contrib.roce import BTH
n = 0
for p in rdpcap(sys.argv[1]):
    b = p[BTH]
    ok = b.icrc == int.from_bytes(b.compute_icrc(None), 'big')
    print(b.opcode, ok)
    n += ok
print("ok", n)
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, path)
	out, err := cmd.Output()
	if err != nil {
		if os.Getenv("CI") == "" {
			if _, e := os.Stat("/usr/lib/python3/dist-packages/scapy"); e != nil {
				t.Skip("python3-scapy is not installed; run `make deps`")
			}
		}
		t.Fatalf("scapy: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("ok %d", len(samplePackets()))) {
		t.Fatalf("scapy's ICRC disagrees:\n%s", out)
	}
}

// tshark puts each frame on its wire's named interface at its time to the
// nanosecond (Wireshark keeps no finer time); scapy reads the interfaces'
// picosecond resolution and every timestamp exactly.
func TestToolsReadInterfacesAndPicoseconds(t *testing.T) {
	tshark := testtool.Need(t, "tshark")
	path := writeSample(t)
	out, err := exec.Command(tshark, testtool.TsharkArgs("-r", path, "-T", "fields", "-E", "separator=,",
		"-e", "frame.interface_id", "-e", "frame.interface_name", "-e", "frame.time_epoch")...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(samplePackets()) {
		t.Fatalf("tshark read %d frames:\n%s", len(lines), out)
	}
	for i, line := range lines {
		ps := sampleTime(i)
		want := fmt.Sprintf("%d,%s,%d.%09d", i%len(sampleWires), sampleWires[i%len(sampleWires)], ps/1e12, ps%1e12/1000)
		if line != want {
			t.Errorf("frame %d: tshark says %q, want %q", i+1, line, want)
		}
	}
	testtool.Need(t, "python3")
	script := `
import sys
from scapy.utils import PcapNgReader
r = PcapNgReader(sys.argv[1])
for p in r:
    print(int(p.time * 10**12))
print("resolutions", " ".join(str(i[2]) for i in r.interfaces))
`
	res, err := exec.Command("/usr/bin/python3", "-c", script, path).Output()
	if err != nil {
		t.Fatalf("scapy: %v", err)
	}
	var want []string
	for i := range samplePackets() {
		want = append(want, fmt.Sprint(sampleTime(i)))
	}
	want = append(want, "resolutions 1000000000000 1000000000000")
	if got := strings.TrimSpace(string(res)); got != strings.Join(want, "\n") {
		t.Fatalf("scapy reads\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}
